import { mapChatMessagesToStoredMessages, mapStoredMessagesToChatMessages, type BaseMessage, type StoredMessage } from "@langchain/core/messages";
import type { AnyBulkWriteOperation, Collection, Db } from "mongodb";
import { CLEAR_FIELDS } from "../crypto/clear-field-cipher.js";
import type { ContentCipher, FieldRef } from "../crypto/content-cipher.js";
import { COLLECTIONS } from "./collections.js";
import type { WriteFence } from "./write-fence.js";

/**
 * Most JSON characters of messages one archive document holds; a turn with more is split into
 * parts. Well below the 256 KB every document of a conversation stays under (docs/storage.md),
 * whatever a single inline message weighs: inline tool outputs are capped by the view's
 * threshold, larger ones are offloaded to `artifacts`.
 */
export const DEFAULT_ARCHIVE_PART_CHARS = 192 * 1024;

/** One finished turn moved out of the thread's working set: its messages, exactly as the thread held them. */
export interface ArchivedTurn {
  /** The turn's number in the conversation's thread, from 1 (the first question). */
  turnNumber: number;
  messages: BaseMessage[];
}

export interface TurnArchiveDocument {
  /** `${conversationId}:${turnNumber}:${part}`: archiving a turn again writes nothing new. */
  _id: string;
  conversationId: string;
  turnNumber: number;
  part: number;
  parts: number;
  /** LangChain's stored form (`mapChatMessagesToStoredMessages`): ids, tool calls, artifacts and metadata included. */
  messages: StoredMessage[];
  archivedAt: Date;
  /** The latest attempt that wrote it, so an older attempt that takes its write back leaves a newer one's alone. */
  attempt?: number;
  /** Retention (RetentionPolicy). */
  expiresAt?: Date;
}

export interface TurnArchiveStoreOptions {
  /** Default: {@link DEFAULT_ARCHIVE_PART_CHARS}. */
  partChars?: number;
  /** Where `messages` is encrypted. Default: stored clear (`CLEAR_FIELDS`); the database passes its own. */
  cipher?: ContentCipher;
}

/** The parts of a turn's stored messages, each under `partChars` of JSON (a message is never split). */
function partsOf(messages: StoredMessage[], partChars: number): StoredMessage[][] {
  const parts: StoredMessage[][] = [[]];
  let chars = 0;
  for (const message of messages) {
    const size = JSON.stringify(message).length;
    if (chars + size > partChars && parts[parts.length - 1].length > 0) {
      parts.push([]);
      chars = 0;
    }
    parts[parts.length - 1].push(message);
    chars += size;
  }
  return parts;
}

/**
 * Finished turns archived out of a thread's working set (`lib/agent/working-set.ts`): written once
 * before they leave the checkpointed `messages` channel, one bounded document per turn (or part of
 * a turn), never rewritten. The thread's `archivedTurns` channel says how many there are.
 */
export class TurnArchiveStore {
  readonly collection: Collection<TurnArchiveDocument>;
  readonly partChars: number;
  readonly #cipher: ContentCipher;

  constructor(db: Db, options: TurnArchiveStoreOptions = {}) {
    this.collection = db.collection<TurnArchiveDocument>(COLLECTIONS.turnArchive);
    this.partChars = options.partChars ?? DEFAULT_ARCHIVE_PART_CHARS;
    this.#cipher = options.cipher ?? CLEAR_FIELDS;
  }

  async setup(): Promise<void> {
    await this.collection.createIndex({ conversationId: 1, turnNumber: 1, part: 1 }, { name: "conversation_turn" });
  }

  /**
   * Archives the turns, idempotent by turn: a turn already archived (a retried step) is not
   * written again. One round trip for the documents, one for the fence's check; written only
   * while `fence` holds, else taken back.
   * @throws StaleWriterError when the fence was lost.
   */
  async archive(turns: readonly ArchivedTurn[], fence: WriteFence, now = new Date()): Promise<void> {
    if (turns.length === 0) return;
    const conversationId = fence.conversationId;
    const attempt = fence.epoch ?? 0;
    const plain = turns.flatMap((turn) => {
      const parts = partsOf(mapChatMessagesToStoredMessages(turn.messages), this.partChars);
      return parts.map((messages, part) => ({
        _id: `${conversationId}:${turn.turnNumber}:${part}`,
        conversationId,
        turnNumber: turn.turnNumber,
        part,
        parts: parts.length,
        messages,
        archivedAt: now,
      }));
    });
    const docs: TurnArchiveDocument[] = await Promise.all(
      plain.map(async (doc) => ({ ...doc, messages: (await this.#cipher.sealJson(conversationId, messagesRef(doc._id), doc.messages)) as StoredMessage[] })),
    );
    const ids = docs.map((d) => d._id);
    await fence.guard(
      async () => {
        const inserts: AnyBulkWriteOperation<TurnArchiveDocument>[] = docs.map((doc) => ({
          updateOne: { filter: { _id: doc._id }, update: { $setOnInsert: { ...doc, attempt, expiresAt: fence.expiresAt } }, upsert: true },
        }));
        const { upsertedCount } = await this.collection.bulkWrite(inserts, { ordered: false });
        // Those already there are now this attempt's too (the embedded server has no `$max`).
        if (upsertedCount < docs.length) await this.collection.updateMany({ _id: { $in: ids }, attempt: { $lt: attempt } }, { $set: { attempt } });
      },
      () => this.collection.deleteMany({ _id: { $in: ids }, attempt }),
    );
  }

  /** The archived turns numbered `from` to `to` (inclusive), oldest first, their parts joined. */
  async read(conversationId: string, from: number, to: number): Promise<ArchivedTurn[]> {
    if (to < from) return [];
    const docs = await this.collection
      .find({ conversationId, turnNumber: { $gte: from, $lte: to } })
      .sort({ turnNumber: 1, part: 1 })
      .toArray();
    const turns: ArchivedTurn[] = [];
    for (const doc of docs) {
      const messages = mapStoredMessagesToChatMessages(await this.#cipher.openJson<StoredMessage[]>(conversationId, messagesRef(doc._id), doc.messages));
      const last = turns[turns.length - 1];
      if (last?.turnNumber === doc.turnNumber) last.messages.push(...messages);
      else turns.push({ turnNumber: doc.turnNumber, messages });
    }
    return turns;
  }

  async deleteByConversation(conversationId: string): Promise<void> {
    await this.collection.deleteMany({ conversationId });
  }
}

/** Where an archived turn's messages are encrypted: its document and the `messages` field. */
function messagesRef(id: string): FieldRef {
  return { collection: COLLECTIONS.turnArchive, id, field: "messages" };
}
