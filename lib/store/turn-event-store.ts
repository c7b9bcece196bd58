import type { Collection, Db } from "mongodb";
import { CLEAR_FIELDS } from "../crypto/clear-field-cipher.js";
import type { ContentCipher, FieldRef } from "../crypto/content-cipher.js";
import { COLLECTIONS } from "./collections.js";
import type { WriteFence } from "./write-fence.js";

/** How long a turn's events are kept for clients that reconnect: the turn record keeps the answer for good. */
export const DEFAULT_TURN_EVENTS_TTL_MS = 86_400_000;

/**
 * An event as the store keeps it: numbered within its turn and typed, otherwise as given. What
 * each type says is the events' (`TurnEvent`, lib/events/turn-event-types.ts, a layer above).
 */
export interface StoredTurnEvent {
  id: number;
  type: string;
  [field: string]: unknown;
}

/** Events stored together: everything a turn said since its previous batch. */
export interface TurnEventBatch {
  /** `${turnId}:${from}`: a retried write of the same batch changes nothing. */
  _id: string;
  conversationId: string;
  turnId: string;
  /** Ids of the first and last event of the batch. */
  from: number;
  to: number;
  events: StoredTurnEvent[];
  expiresAt: Date;
}

export interface TurnEventStoreOptions {
  /** Default: {@link DEFAULT_TURN_EVENTS_TTL_MS}. */
  ttlMs?: number;
  /** Default: events stored clear (`CLEAR_FIELDS`); the database passes its own. A batch's `events` are encrypted. */
  cipher?: ContentCipher;
}

const eventsRef = (batchId: string): FieldRef => ({ collection: COLLECTIONS.turnEvents, id: batchId, field: "events" });

/**
 * A turn's events for resumption in another process (a client that reconnects to another
 * container). Written in batches at step boundaries, never one text delta at a time: a turn
 * makes a bounded number of writes here whatever its answer's length (docs/streaming.md).
 */
export class TurnEventStore {
  readonly #batches: Collection<TurnEventBatch>;
  readonly #ttlMs: number;
  readonly #cipher: ContentCipher;

  constructor(db: Db, options: TurnEventStoreOptions = {}) {
    this.#batches = db.collection<TurnEventBatch>(COLLECTIONS.turnEvents);
    this.#ttlMs = options.ttlMs ?? DEFAULT_TURN_EVENTS_TTL_MS;
    this.#cipher = options.cipher ?? CLEAR_FIELDS;
  }

  async setup(): Promise<void> {
    await this.#batches.createIndex({ turnId: 1, to: 1 }, { name: "turn_events" });
    await this.#batches.createIndex({ conversationId: 1 }, { name: "conversation_events" });
    await this.#batches.createIndex({ expiresAt: 1 }, { name: "events_ttl", expireAfterSeconds: 0 });
  }

  /** Stores the batch while `fence` holds; a non-empty batch only. */
  async append(turnId: string, events: StoredTurnEvent[], fence: WriteFence, now = new Date()): Promise<void> {
    const from = events[0].id;
    const _id = `${turnId}:${from}`;
    const batch: TurnEventBatch = {
      _id,
      conversationId: fence.conversationId,
      turnId,
      from,
      to: events[events.length - 1].id,
      events: (await this.#cipher.sealJson(fence.conversationId, eventsRef(_id), events)) as StoredTurnEvent[],
      expiresAt: new Date(now.getTime() + this.#ttlMs),
    };
    await fence.guard(
      () => this.#batches.updateOne({ _id: batch._id }, { $setOnInsert: batch }, { upsert: true }),
      () => this.#batches.deleteOne({ _id: batch._id }),
    );
  }

  /** The turn's stored events after `afterId`, in order. */
  async after(turnId: string, afterId: number): Promise<StoredTurnEvent[]> {
    const batches = await this.#batches
      .find({ turnId, to: { $gt: afterId } })
      .sort({ to: 1 })
      .toArray();
    const opened = await Promise.all(batches.map((b) => this.#cipher.openJson<StoredTurnEvent[]>(b.conversationId, eventsRef(b._id), b.events)));
    return opened.flat().filter((e) => e.id > afterId);
  }

  /** The id of the turn's last stored event; 0 when none is stored. */
  async lastId(turnId: string): Promise<number> {
    const last = await this.#batches
      .find({ turnId }, { projection: { to: 1 } })
      .sort({ to: -1 })
      .limit(1)
      .next();
    return last?.to ?? 0;
  }

  async deleteByConversation(conversationId: string): Promise<void> {
    await this.#batches.deleteMany({ conversationId });
  }
}
