import type { Collection } from "mongodb";
import { ConflictError } from "../errors.js";
import type { ConversationDocument } from "./conversation-store.js";

/** How long a lease lasts unless renewed: long enough for a model call, short enough that a crash does not block for long. */
export const DEFAULT_LEASE_TTL_MS = 120_000;
/** Longest `Retry-After` suggested to a caller that meets a held lease: turns usually end sooner than leases. */
export const MAX_RETRY_AFTER_S = 5;

/**
 * One turn at a time per conversation: a lease taken with one atomic update that only
 * matches when no unexpired lease is held by someone else.
 */
export class ConversationLease {
  constructor(
    private readonly conversations: Collection<ConversationDocument>,
    private readonly ttlMs = DEFAULT_LEASE_TTL_MS,
  ) {}

  /** Takes (or re-takes, for the same holder) the lease; throws ConflictError when another holder has it. */
  async acquire(conversationId: string, holder: string, now = new Date()): Promise<void> {
    const expiresAt = new Date(now.getTime() + this.ttlMs);
    const result = await this.conversations.updateOne(
      // `lease: null` also matches a conversation without the field.
      { _id: conversationId, $or: [{ lease: null }, { "lease.expiresAt": { $lte: now } }, { "lease.holder": holder }] },
      { $set: { lease: { holder, expiresAt } } },
    );
    if (result.matchedCount === 1) return;
    const current = await this.conversations.findOne({ _id: conversationId });
    const remainingMs = current?.lease ? current.lease.expiresAt.getTime() - now.getTime() : this.ttlMs;
    const retryAfter = Math.min(MAX_RETRY_AFTER_S, Math.max(1, Math.ceil(remainingMs / 1000)));
    throw new ConflictError("a turn is already running on this conversation", retryAfter);
  }

  async release(conversationId: string, holder: string): Promise<void> {
    await this.conversations.updateOne({ _id: conversationId, "lease.holder": holder }, { $set: { lease: null } });
  }
}
