import { MongoServerError, type Collection, type Db } from "mongodb";
import { COLLECTIONS } from "../store/collections.js";

/** How long a seen event id is remembered; Slack retries for minutes, Bot Framework for less. */
export const DEFAULT_CHANNEL_EVENT_TTL_SECONDS = 24 * 60 * 60;

const DUPLICATE_KEY = 11000;

/** Remembers which channel events were already accepted, so a retry becomes no second turn. */
export interface EventDeduper {
  /** True the first time `eventId` is claimed, false for every later delivery of it. */
  claim(eventId: string, now?: Date): Promise<boolean>;
  /** Forgets a claim whose turn could not be enqueued, so the channel's retry gets through. */
  release(eventId: string): Promise<void>;
}

/**
 * Claims the event and hands its job to the queue, exactly once: false for a duplicate; a
 * failed enqueue releases the claim and rethrows, so the channel's retry gets through.
 */
export async function enqueueOnce<J extends { dedupeId: string }>(
  job: J,
  deduper: EventDeduper,
  enqueue: (job: J) => Promise<void>,
  now: Date,
): Promise<boolean> {
  if (!(await deduper.claim(job.dedupeId, now))) return false;
  try {
    await enqueue(job);
  } catch (error) {
    await deduper.release(job.dedupeId);
    throw error;
  }
  return true;
}

export interface ChannelEventDocument {
  _id: string;
  receivedAt: Date;
}

export interface ChannelEventDeduperOptions {
  /** Default: {@link DEFAULT_CHANNEL_EVENT_TTL_SECONDS}. */
  ttlSeconds?: number;
}

/**
 * Event ids as `_id`s: the unique `_id` index makes the claim atomic across concurrent
 * Lambda invocations, and a TTL index forgets them.
 */
export class ChannelEventDeduper implements EventDeduper {
  readonly collection: Collection<ChannelEventDocument>;
  private readonly ttlSeconds: number;

  constructor(db: Db, options: ChannelEventDeduperOptions = {}) {
    this.collection = db.collection<ChannelEventDocument>(COLLECTIONS.channelEvents);
    this.ttlSeconds = options.ttlSeconds ?? DEFAULT_CHANNEL_EVENT_TTL_SECONDS;
  }

  /** Idempotent; run once at start-up. */
  async setup(): Promise<void> {
    await this.collection.createIndex({ receivedAt: 1 }, { name: "ttl", expireAfterSeconds: this.ttlSeconds });
  }

  async claim(eventId: string, now: Date = new Date()): Promise<boolean> {
    try {
      await this.collection.insertOne({ _id: eventId, receivedAt: now });
      return true;
    } catch (error) {
      if (error instanceof MongoServerError && error.code === DUPLICATE_KEY) return false;
      throw error;
    }
  }

  async release(eventId: string): Promise<void> {
    await this.collection.deleteOne({ _id: eventId });
  }
}
