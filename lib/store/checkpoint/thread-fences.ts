import { MongoServerError, type ObjectId, type Collection, type Filter } from "mongodb";
import { StaleWriterError, ValidationError } from "../../errors.js";

const DUPLICATE_KEY = 11000;

/**
 * One document per thread in `checkpoint_threads`: the thread's fence epoch (the highest epoch a
 * writer claimed it with) and, per epoch whose writes are not yet compacted, the token of the
 * last write that committed under it.
 */
export interface ThreadFenceDocument {
  _id: string;
  thread_id: string;
  fence: number;
  marks: Record<string, number>;
  /** Where the next prune starts, and the lease of the prune running (see {@link ThreadFences.beginPrune}). */
  prune?: PruneState;
  upserted_at?: Date;
  expiresAt?: Date;
}

/**
 * What one prune leaves for the next: it examines only documents whose `_id` (an ObjectId, made
 * when the document was inserted) is at or above `since`, the `next` of the prune before it.
 */
export interface PruneState {
  since?: ObjectId;
  next?: ObjectId;
  /** The `keep` of the last prune: the checkpoints it kept as the latest are examined again. */
  keep?: number;
  /** A root checkpoint replays writes (a DeltaChannel): the root namespace keeps every checkpoint. */
  rootReplays?: true;
  lease?: { token: number; until: Date };
}

/** Fields a fenced write stamps on its documents: its epoch and its commit token (until compacted). */
export interface FenceStamp {
  /** Null on pending writes of an unfenced writer, which are keyed by epoch too. */
  epoch?: number | null;
  token?: number;
}

/** What a reader knows of a thread's fence: `null` for a thread without a fence document. */
export type FenceView = Pick<ThreadFenceDocument, "fence" | "marks" | "prune"> | null;

/**
 * Whether readers see a document. Unfenced documents and compacted ones (no `token`) are always
 * visible; a fenced one only once its writer committed a token at least as large under its
 * epoch, which the commit makes conditional on the fence (see {@link ThreadFences.commit}).
 */
export function isVisible(doc: FenceStamp, view: FenceView): boolean {
  if (doc.token === undefined || doc.token === null) return true;
  const mark = view?.marks?.[String(doc.epoch)];
  return mark !== undefined && doc.token <= mark;
}

/** Reads `configurable.fence_epoch`: absent, or a non-negative integer. */
export function readFenceEpoch(value: unknown): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw new ValidationError("configurable.fence_epoch must be a non-negative integer");
  }
  return value;
}

let lastToken = 0;

/**
 * Commit tokens: increasing within the process, near the clock across processes. Writes of one
 * (thread, epoch) are serialized, so their tokens grow in commit order.
 */
function nextToken(): number {
  lastToken = Math.max(Date.now() * 1000, lastToken + 1);
  return lastToken;
}

/**
 * Fencing for the checkpointer, in `checkpoint_threads`.
 *
 * `claim` raises a thread's fence. A fenced write (a `put` or `putWrites` given
 * `configurable.fence_epoch`) stamps its documents with its epoch and a fresh token, writes
 * them, then commits with one conditional update of the thread's document: the token becomes the
 * epoch's mark only while the fence is not above the epoch. Readers see a fenced document only
 * when its token is at most its epoch's mark, so a write refused at commit is never visible,
 * whatever it wrote before; the writer then removes its documents. Writes of one thread and
 * epoch are serialized in this process so that marks only grow; one epoch belongs to one writer.
 */
export class ThreadFences {
  private readonly queues = new Map<string, Promise<unknown>>();

  constructor(
    readonly collection: Collection<ThreadFenceDocument>,
    private readonly stamp: () => { upserted_at?: Date; expiresAt?: Date },
  ) {}

  /** Raises the thread's fence to `epoch` (creating its document); throws StaleWriterError when it is already higher. */
  async claim(threadId: string, epoch: number): Promise<void> {
    if (typeof threadId !== "string" || threadId === "") throw new ValidationError("threadId must be a non-empty string");
    readFenceEpoch(epoch);
    for (let attempt = 0; attempt < 3; attempt += 1) {
      try {
        await this.collection.updateOne(
          { _id: threadId, fence: { $lte: epoch } },
          { $set: { fence: epoch, ...this.stamp() }, $setOnInsert: { thread_id: threadId, marks: {} } },
          { upsert: true },
        );
        return;
      } catch (error) {
        if (!(error instanceof MongoServerError) || error.code !== DUPLICATE_KEY) throw error;
        const current = await this.collection.findOne({ _id: threadId });
        // Deleted between the update and the read: claim again.
        if (current !== null) throw stale(threadId, epoch, current.fence);
      }
    }
    throw stale(threadId, epoch, undefined);
  }

  /** The thread's fence, as readers need it. */
  async view(threadId: string): Promise<FenceView> {
    return this.collection.findOne({ _id: threadId }, { projection: { fence: 1, marks: 1, prune: 1 } });
  }

  /** The thread's fence; throws StaleWriterError unless it is at or below `epoch`. */
  async assertHeld(threadId: string, epoch: number): Promise<FenceView> {
    const view = await this.view(threadId);
    if (view === null || view.fence > epoch) throw stale(threadId, epoch, view?.fence);
    return view;
  }

  /**
   * Runs a fenced write: serialized with the other writes of the thread and epoch, given a fresh
   * token to stamp on what it writes, and committed by raising the epoch's mark to that token
   * while the fence allows it. When the commit is refused, `undo` removes what was written and
   * StaleWriterError is thrown.
   */
  async write<T>(threadId: string, epoch: number, write: (token: number) => Promise<T>, undo: (token: number) => Promise<unknown>): Promise<T> {
    return this.serialized(`${threadId}\u0000${epoch}`, async () => {
      const token = nextToken();
      const result = await write(token);
      const committed = await this.collection.updateOne({ _id: threadId, fence: { $lte: epoch } }, { $set: { [`marks.${epoch}`]: token } });
      if (committed.matchedCount === 1) return result;
      await undo(token);
      const view = await this.view(threadId);
      throw stale(threadId, epoch, view?.fence);
    });
  }

  /**
   * Takes the thread's prune lease for `leaseMs`: one prune per thread at a time, enforced by a
   * conditional update of its fence document, which also requires the fence to allow `epoch`
   * (when given). Returns the lease's token and the thread's prune state, or undefined when
   * another prune holds an unexpired lease.
   * @throws StaleWriterError when the fence is above `epoch`, or the thread has no fence document.
   */
  async beginPrune(threadId: string, epoch: number | undefined, leaseMs: number): Promise<{ token: number; view: NonNullable<FenceView> } | undefined> {
    const token = nextToken();
    const now = new Date();
    const filter: Filter<ThreadFenceDocument> = {
      _id: threadId,
      ...(epoch === undefined ? {} : { fence: { $lte: epoch } }),
      $or: [{ "prune.lease": { $exists: false } }, { "prune.lease.until": { $lt: now } }],
    };
    const taken = await this.collection.findOneAndUpdate(
      filter,
      { $set: { "prune.lease": { token, until: new Date(now.getTime() + leaseMs) } } },
      { returnDocument: "after", projection: { fence: 1, marks: 1, prune: 1 } },
    );
    if (taken !== null) return { token, view: taken };
    const current = await this.view(threadId);
    if (current === null || (epoch !== undefined && current.fence > epoch)) throw stale(threadId, epoch, current?.fence);
    return undefined;
  }

  /**
   * Checks, before each of a prune's writes, that it still holds its lease and the fence still
   * allows its epoch.
   * @throws StaleWriterError when either was lost (a prune that outlived its lease or its fence).
   */
  async assertPruning(threadId: string, epoch: number | undefined, token: number): Promise<void> {
    const held = await this.collection.findOne(
      { _id: threadId, "prune.lease.token": token, ...(epoch === undefined ? {} : { fence: { $lte: epoch } }) },
      { projection: { _id: 1 } },
    );
    if (held !== null) return;
    const current = await this.view(threadId);
    if (current === null || (epoch !== undefined && current.fence > epoch)) throw stale(threadId, epoch, current?.fence);
    throw new StaleWriterError(`the prune of thread ${threadId} outlived its lease, and another prune took it over`, threadId, epoch, {
      currentEpoch: current.fence,
    });
  }

  /** Ends a prune: records where the next one starts and releases the lease, if still held. */
  async endPrune(threadId: string, token: number, state: Omit<PruneState, "lease"> | undefined): Promise<void> {
    await this.collection.updateOne(
      { _id: threadId, "prune.lease.token": token },
      state === undefined ? { $unset: { "prune.lease": "" } } : { $set: { prune: state } },
    );
  }

  /** Forgets the marks of epochs below the fence once their documents no longer carry tokens. */
  async forgetMarks(threadId: string, epochs: string[]): Promise<void> {
    if (epochs.length === 0) return;
    await this.collection.updateOne({ _id: threadId }, { $unset: Object.fromEntries(epochs.map((e) => [`marks.${e}`, ""])) });
  }

  async remove(threadId: string): Promise<void> {
    await this.collection.deleteOne({ _id: threadId });
  }

  private async serialized<T>(key: string, run: () => Promise<T>): Promise<T> {
    const previous = this.queues.get(key) ?? Promise.resolve();
    const current = previous.then(run, run);
    const settled = current.catch(() => undefined);
    this.queues.set(key, settled);
    try {
      return await current;
    } finally {
      if (this.queues.get(key) === settled) this.queues.delete(key);
    }
  }
}

function stale(threadId: string, epoch: number | undefined, currentEpoch: number | undefined): StaleWriterError {
  const why = currentEpoch === undefined ? "has no fence (it was deleted or never claimed)" : `is fenced at epoch ${currentEpoch}`;
  return new StaleWriterError(`thread ${threadId} ${why}; a writer at epoch ${epoch} may not write to it`, threadId, epoch, { currentEpoch });
}
