import type { Db } from "mongodb";
import { COLLECTIONS } from "./collections.js";
import { DEFAULT_RETENTION_DAYS } from "../config/database-config.js";

const DAY_MS = 86_400_000;

/** Where each collection keeps the conversation id (checkpoints call it the thread id); erasure and export select by it too. */
export const OWNER_FIELD: Record<string, string> = {
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
 * Inactivity-based expiry for every collection that holds a conversation: each document has an
 * `expiresAt` from its first write, with a TTL index, and activity pushes it forward. The push is
 * a renewal that runs at most once per quarter period of activity (the conversation document keeps
 * when it last ran), so a turn costs one read here, not a write to every collection: documents
 * written since carry their own full period, and a renewal leaves every older one at least three
 * quarters of a period ahead, so none of an active conversation is ever within half a period of
 * expiring.
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
   * TTL indexes on every collection, and the owner's documents by expiry, so that a renewal
   * examines only the documents due for it, not every document the conversation has; idempotent,
   * run once at start-up.
   */
  async setup(): Promise<void> {
    await Promise.all(
      Object.entries(OWNER_FIELD).flatMap(([name, field]) => [
        this.db.collection(name).createIndex({ expiresAt: 1 }, { name: "retention_ttl", expireAfterSeconds: 0 }),
        ...(field === "_id" ? [] : [this.db.collection(name).createIndex({ [field]: 1, expiresAt: 1 }, { name: "retention_owner" })]),
      ]),
    );
  }

  /**
   * Marks the conversation active now: when its last renewal is a quarter period old (or it has
   * none), everything of it expiring within three quarters of a period is given a full one. The
   * renewal is recorded after its writes, so one cut short runs again on the next turn.
   */
  async touch(conversationId: string, now = new Date()): Promise<void> {
    const conversations = this.db.collection<{ _id: string; retentionRenewedAt?: Date }>(COLLECTIONS.conversations);
    const conversation = await conversations.findOne({ _id: conversationId }, { projection: { retentionRenewedAt: 1 } });
    if (!conversation) return;
    if (conversation.retentionRenewedAt && now.getTime() - conversation.retentionRenewedAt.getTime() < this.periodMs / 4) return;
    const expiresAt = new Date(now.getTime() + this.periodMs);
    const renewBefore = new Date(now.getTime() + (this.periodMs * 3) / 4);
    await Promise.all(
      Object.entries(OWNER_FIELD).map(([name, field]) =>
        this.db
          .collection(name)
          .updateMany({ [field]: conversationId, $or: [{ expiresAt: { $exists: false } }, { expiresAt: { $lt: renewBefore } }] }, { $set: { expiresAt } }),
      ),
    );
    await conversations.updateOne({ _id: conversationId }, { $set: { retentionRenewedAt: now } });
  }
}
