import type { Db } from "mongodb";
import { COLLECTIONS } from "./collections.js";
import { DEFAULT_RETENTION_DAYS } from "../config/config.js";

const DAY_MS = 86_400_000;

/** Where each collection keeps the conversation id (checkpoints call it the thread id). */
const OWNER_FIELD: Record<string, string> = {
  [COLLECTIONS.conversations]: "_id",
  [COLLECTIONS.messages]: "conversationId",
  [COLLECTIONS.turns]: "conversationId",
  [COLLECTIONS.modelCalls]: "conversationId",
  [COLLECTIONS.turnArchive]: "conversationId",
  [COLLECTIONS.artifacts]: "conversationId",
  [COLLECTIONS.followUps]: "conversationId",
  [COLLECTIONS.approvals]: "conversationId",
  [COLLECTIONS.recallTurns]: "conversationId",
  [COLLECTIONS.recallIndex]: "conversationId",
  [COLLECTIONS.checkpoints]: "thread_id",
  [COLLECTIONS.checkpointWrites]: "thread_id",
  [COLLECTIONS.checkpointBlobs]: "thread_id",
  [COLLECTIONS.checkpointThreads]: "thread_id",
};

export interface RetentionOptions {
  /** Default: {@link DEFAULT_RETENTION_DAYS}. */
  days?: number;
}

/**
 * Inactivity-based expiry for every collection that holds a conversation: each document has
 * an `expiresAt` with a TTL index, and activity pushes it forward. The push is lazy (only
 * documents without an expiry or within half the period of it), so each document is written
 * about once per half period, not on every turn.
 */
export class RetentionPolicy {
  readonly periodMs: number;

  constructor(
    private readonly db: Db,
    options: RetentionOptions = {},
  ) {
    this.periodMs = (options.days ?? DEFAULT_RETENTION_DAYS) * DAY_MS;
  }

  /**
   * TTL indexes on every collection, and the owner's documents by expiry, so that `touch` (every
   * turn) examines only the documents without an expiry or due for renewal, not every document the
   * conversation has; idempotent, run once at start-up.
   */
  async setup(): Promise<void> {
    await Promise.all(
      Object.entries(OWNER_FIELD).flatMap(([name, field]) => [
        this.db.collection(name).createIndex({ expiresAt: 1 }, { name: "retention_ttl", expireAfterSeconds: 0 }),
        ...(field === "_id" ? [] : [this.db.collection(name).createIndex({ [field]: 1, expiresAt: 1 }, { name: "retention_owner" })]),
      ]),
    );
  }

  /** Marks the conversation active now: everything of it lives another full period. */
  async touch(conversationId: string, now = new Date()): Promise<void> {
    const expiresAt = new Date(now.getTime() + this.periodMs);
    const renewBefore = new Date(now.getTime() + this.periodMs / 2);
    await Promise.all(
      Object.entries(OWNER_FIELD).map(([name, field]) =>
        this.db
          .collection(name)
          .updateMany({ [field]: conversationId, $or: [{ expiresAt: { $exists: false } }, { expiresAt: { $lt: renewBefore } }] }, { $set: { expiresAt } }),
      ),
    );
  }
}
