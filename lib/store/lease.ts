import type { Collection } from "mongodb";
import { systemClock, type Clock } from "../clock.js";
import { ConflictError, NotFoundError } from "../errors.js";
import type { ConversationDocument } from "./conversation-store.js";
import { WriteFence } from "./write-fence.js";
import { DEFAULT_LEASE_TTL_MS } from "../config/database-config.js";

/** Longest `Retry-After` suggested to a caller that meets a held lease: turns usually end sooner than leases. */
export const MAX_RETRY_AFTER_S = 5;
/** Heartbeats per lease period: two can be missed (a slow database) before the lease lapses. */
const HEARTBEATS_PER_TTL = 3;
/** The holder a deletion writes: no turn acquires the conversation while it is being deleted. */
const DELETION_HOLDER = "deletion";

export interface ConversationLeaseOptions {
  /** Default: {@link DEFAULT_LEASE_TTL_MS}. */
  ttlMs?: number;
  /** How long documents written under a fence live unless the conversation is used again. Required. */
  retentionMs: number;
  /** Default: the system clock. */
  clock?: Clock;
}

/**
 * One turn at a time per conversation, with fencing. Each acquisition raises the
 * conversation's `leaseEpoch` in the same atomic update that takes the lease, and returns a
 * {@link WriteFence} for that epoch: a turn whose lease expired under it (a paused process) and
 * was taken over can no longer write, and neither can one whose conversation was deleted.
 */
export class ConversationLease {
  readonly ttlMs: number;
  private readonly retentionMs: number;
  private readonly clock: Clock;

  constructor(
    private readonly conversations: Collection<ConversationDocument>,
    options: ConversationLeaseOptions,
  ) {
    this.ttlMs = options.ttlMs ?? DEFAULT_LEASE_TTL_MS;
    this.retentionMs = options.retentionMs;
    this.clock = options.clock ?? systemClock;
  }

  /**
   * Takes the lease under a new epoch. Throws ConflictError while another holder's lease is
   * unexpired, NotFoundError when the conversation does not exist.
   */
  async acquire(conversationId: string, holder: string): Promise<WriteFence> {
    const now = this.clock.now();
    const doc = await this.conversations.findOneAndUpdate(
      // `lease: null` also matches a document without the field.
      { _id: conversationId, $or: [{ lease: null }, { "lease.expiresAt": { $lte: now } }] },
      { $inc: { leaseEpoch: 1 }, $set: { lease: { holder, expiresAt: this.expiry(now) } } },
      { returnDocument: "after" },
    );
    if (doc?.leaseEpoch !== undefined) return this.fenceOf(conversationId, holder, doc.leaseEpoch);
    const current = await this.conversations.findOne({ _id: conversationId });
    if (!current) throw new NotFoundError(`conversation ${conversationId} not found`);
    const remainingMs = current.lease ? current.lease.expiresAt.getTime() - now.getTime() : this.ttlMs;
    const retryAfter = Math.min(MAX_RETRY_AFTER_S, Math.max(1, Math.ceil(remainingMs / 1000)));
    throw new ConflictError("a turn is already running on this conversation", retryAfter);
  }

  /** Extends the lease of a fence that still holds it; false when it was taken over, released or deleted. */
  async renew(fence: WriteFence): Promise<boolean> {
    const result = await this.conversations.updateOne(
      { _id: fence.conversationId, leaseEpoch: fence.epoch, "lease.holder": fence.holder },
      { $set: { "lease.expiresAt": this.expiry(this.clock.now()) } },
    );
    return result.matchedCount === 1;
  }

  /**
   * Renews the lease a third of its period apart for as long as the turn works, so a long model
   * call keeps it. When a renewal finds the fence lost, `onLost` is called once and beats stop;
   * a renewal that fails (database unreachable) is tried again at the next beat.
   */
  keepAlive(fence: WriteFence, onLost: () => void): () => void {
    let stopped = false;
    const stop = this.clock.every(Math.floor(this.ttlMs / HEARTBEATS_PER_TTL), async () => {
      if (stopped) return;
      const held = await this.renew(fence).catch(() => true);
      if (held || stopped) return;
      stopped = true;
      stop();
      onLost();
    });
    return () => {
      stopped = true;
      stop();
    };
  }

  async release(fence: WriteFence): Promise<void> {
    await this.conversations.updateOne({ _id: fence.conversationId, leaseEpoch: fence.epoch, "lease.holder": fence.holder }, { $set: { lease: null } });
  }

  /**
   * Fences every holder out for a deletion: raises the epoch under a lease no turn can take
   * while it runs. Returns the new epoch, or undefined when the conversation does not exist.
   */
  async revoke(conversationId: string): Promise<number | undefined> {
    const doc = await this.conversations.findOneAndUpdate(
      { _id: conversationId },
      { $inc: { leaseEpoch: 1 }, $set: { lease: { holder: DELETION_HOLDER, expiresAt: this.expiry(this.clock.now()) } } },
      { returnDocument: "after" },
    );
    return doc?.leaseEpoch;
  }

  /** A fence for writes made outside a turn (a queued turn's record): it holds while the conversation exists and is not being deleted. */
  existing(conversationId: string): WriteFence {
    return new WriteFence(conversationId, undefined, undefined, this.retentionExpiry(), async () => {
      const doc = await this.conversations.findOne({ _id: conversationId, "lease.holder": { $ne: DELETION_HOLDER } }, { projection: { _id: 1 } });
      return doc !== null;
    });
  }

  private fenceOf(conversationId: string, holder: string, epoch: number): WriteFence {
    return new WriteFence(conversationId, epoch, holder, this.retentionExpiry(), async () => {
      const doc = await this.conversations.findOne({ _id: conversationId, leaseEpoch: epoch, "lease.holder": holder }, { projection: { _id: 1 } });
      return doc !== null;
    });
  }

  private expiry(now: Date): Date {
    return new Date(now.getTime() + this.ttlMs);
  }

  private retentionExpiry(): Date {
    return new Date(this.clock.now().getTime() + this.retentionMs);
  }
}
