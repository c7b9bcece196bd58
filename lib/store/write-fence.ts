import type { Collection, Filter, UpdateFilter } from "mongodb";
import { StaleWriterError } from "../errors.js";

/** A document written once under a fence: it records the attempt that wrote it last and expires with the conversation. */
export interface FencedDocument {
  _id: string;
  attempt?: number;
  expiresAt?: Date;
}

/**
 * The permission a turn writes under: every write it makes outside the turn document runs
 * through {@link guard}, which checks after the write that the turn still holds its conversation
 * and takes the write back when it does not. Turn documents and model-call records also carry
 * the epoch and filter on it.
 *
 * Without multi-document transactions (the embedded server's lose concurrent updates, see the
 * docs/storage.md, "Turns and fencing") two windows remain: a reader may see a stale write for the
 * moment before it is taken back, and a writer that dies between its write and its check
 * leaves the document, carrying `expiresAt`, until retention removes it.
 */
export class WriteFence {
  constructor(
    readonly conversationId: string,
    /** The lease acquisition this fence belongs to; undefined for writes that only need the conversation to exist. */
    readonly epoch: number | undefined,
    /** Who holds the lease under this epoch (one attempt of one turn); undefined with the epoch. */
    readonly holder: string | undefined,
    /** When documents written under this fence expire (the conversation's retention). */
    readonly expiresAt: Date,
    private readonly held: () => Promise<boolean>,
  ) {}

  /**
   * Runs `write`, then checks the fence: when it no longer holds, `undo` removes what the write
   * added (it gets the write's result) and the call throws StaleWriterError. Checking after the
   * write, not before, is what catches a takeover or deletion that raced it.
   */
  async guard<T>(write: () => Promise<T>, undo?: (result: T) => Promise<unknown>): Promise<T> {
    const result = await write();
    if (await this.held()) return result;
    await undo?.(result);
    throw this.stale();
  }

  /**
   * Writes a document once (a retry of the same write changes nothing), with this fence's expiry,
   * and records the latest attempt that wrote it, so an older attempt taking its write back
   * leaves a newer one's alone.
   */
  async insertOnce<T extends FencedDocument>(collection: Collection<T>, doc: T): Promise<void> {
    const { _id } = doc;
    const attempt = this.epoch ?? 0;
    const ours = { _id, attempt } as unknown as Filter<T>;
    await this.guard(
      async () => {
        const insert = { $setOnInsert: { ...doc, attempt, expiresAt: this.expiresAt } } as UpdateFilter<T>;
        const { upsertedCount } = await collection.updateOne({ _id } as Filter<T>, insert, { upsert: true });
        // An existing document's attempt is raised separately: the embedded server has no `$max`.
        if (upsertedCount === 0) {
          await collection.updateOne({ _id, attempt: { $lt: attempt } } as unknown as Filter<T>, { $set: { attempt } } as unknown as UpdateFilter<T>);
        }
      },
      () => collection.deleteOne(ours),
    );
  }

  stale(cause?: unknown): StaleWriterError {
    return new StaleWriterError(
      `conversation ${this.conversationId} is no longer held by this turn (epoch ${this.epoch ?? "none"})`,
      this.conversationId,
      this.epoch,
      cause === undefined ? undefined : { cause },
    );
  }
}
