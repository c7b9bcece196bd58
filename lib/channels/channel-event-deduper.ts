import { MongoServerError, type Collection, type Db } from "mongodb";
import { COLLECTIONS } from "../store/collections.js";

/** How long a seen event id is remembered; Slack retries for minutes, Bot Framework for less. */
export const DEFAULT_CHANNEL_EVENT_TTL_SECONDS = 24 * 60 * 60;

const DUPLICATE_KEY = 11000;

/**
 * How long a claim whose job is not yet enqueued counts as in flight: past it, the delivery that
 * made it is taken to have died (a webhook function lives 10 s), and a retry takes the claim over.
 */
export const DEFAULT_CHANNEL_EVENT_IN_FLIGHT_SECONDS = 30;

/** A delivery's claim: the first (or one taking over a dead one's), a later one of an enqueued event, or one while the first is still enqueueing. */
export type EventClaim = "claimed" | "duplicate" | "in_flight";

/** Remembers which channel events were already accepted, so a retry becomes no second turn. */
export interface EventDeduper {
  /**
   * `claimed` the first time `eventId` is claimed, and for a claim in flight for longer than its
   * window; `duplicate` once its job is enqueued (`confirm`); `in_flight` while the first delivery
   * is still enqueueing, which the channel must retry, since that delivery may yet fail.
   */
  claim(eventId: string, now?: Date): Promise<EventClaim>;
  /** Records that the claimed event's job is enqueued: later deliveries are duplicates. */
  confirm(eventId: string): Promise<void>;
  /** Forgets a claim whose turn could not be enqueued, so the channel's retry gets through. */
  release(eventId: string): Promise<void>;
}

/**
 * Claims the event and hands its job to the queue, exactly once: `duplicate` once it is enqueued,
 * `in_flight` while another delivery enqueues it; a failed enqueue releases the claim and rethrows,
 * so the channel's retry gets through.
 */
export async function enqueueOnce<J extends { dedupeId: string }>(
  job: J,
  deduper: EventDeduper,
  enqueue: (job: J) => Promise<void>,
  now: Date,
): Promise<"enqueued" | "duplicate" | "in_flight"> {
  const claim = await deduper.claim(job.dedupeId, now);
  if (claim !== "claimed") return claim;
  try {
    await enqueue(job);
  } catch (error) {
    await deduper.release(job.dedupeId);
    throw error;
  }
  // Not released if this fails: the job is queued, and a claim taken over re-enqueues the same job, which the queue and the turn id dedupe.
  await deduper.confirm(job.dedupeId);
  return "enqueued";
}

export interface ChannelEventDocument {
  _id: string;
  receivedAt: Date;
  /** Set while the job is not yet enqueued; a document without it (and one written before it existed) is an enqueued event. */
  pending?: true;
}

export interface ChannelEventDeduperOptions {
  /** Default: {@link DEFAULT_CHANNEL_EVENT_TTL_SECONDS}. */
  ttlSeconds?: number;
  /** Default: {@link DEFAULT_CHANNEL_EVENT_IN_FLIGHT_SECONDS}. */
  inFlightSeconds?: number;
}

/**
 * Event ids as `_id`s: the unique `_id` index makes the claim atomic across concurrent
 * Lambda invocations, and a TTL index forgets them.
 */
export class ChannelEventDeduper implements EventDeduper {
  readonly collection: Collection<ChannelEventDocument>;
  private readonly ttlSeconds: number;
  private readonly inFlightMs: number;

  constructor(db: Db, options: ChannelEventDeduperOptions = {}) {
    this.collection = db.collection<ChannelEventDocument>(COLLECTIONS.channelEvents);
    this.ttlSeconds = options.ttlSeconds ?? DEFAULT_CHANNEL_EVENT_TTL_SECONDS;
    this.inFlightMs = (options.inFlightSeconds ?? DEFAULT_CHANNEL_EVENT_IN_FLIGHT_SECONDS) * 1000;
  }

  /** Idempotent; run once at start-up. */
  async setup(): Promise<void> {
    await this.collection.createIndex({ receivedAt: 1 }, { name: "ttl", expireAfterSeconds: this.ttlSeconds });
  }

  async claim(eventId: string, now: Date = new Date()): Promise<EventClaim> {
    try {
      await this.collection.insertOne({ _id: eventId, receivedAt: now, pending: true });
      return "claimed";
    } catch (error) {
      if (!(error instanceof MongoServerError && error.code === DUPLICATE_KEY)) throw error;
    }
    // One update decides between retries racing to take over a dead delivery's claim.
    const dead = new Date(now.getTime() - this.inFlightMs);
    const taken = await this.collection.updateOne({ _id: eventId, pending: true, receivedAt: { $lt: dead } }, { $set: { receivedAt: now } });
    if (taken.modifiedCount === 1) return "claimed";
    const existing = await this.collection.findOne({ _id: eventId }, { projection: { pending: 1 } });
    // Released meanwhile: the failed delivery's retry is on its way, or this one is retried.
    return existing && !existing.pending ? "duplicate" : "in_flight";
  }

  async confirm(eventId: string): Promise<void> {
    await this.collection.updateOne({ _id: eventId }, { $unset: { pending: "" } });
  }

  async release(eventId: string): Promise<void> {
    await this.collection.deleteOne({ _id: eventId });
  }
}
