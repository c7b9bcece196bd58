import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { ObjectId, type Collection, type Filter, type WithId } from "mongodb";
import { z } from "zod";
import { ValidationError } from "../../errors.js";
import { parseOrThrow } from "../../validation.js";
import type { BlobDocument } from "./blob-reader.js";
import type { BlobPruner } from "./blob-pruner.js";
import type { ChannelBlobStore } from "./channel-blob-store.js";
import { decodeHeader, type CheckpointDocument, type DecodedHeader, type HeaderSeal } from "./checkpoint-header.js";
import type { WriteDocument } from "./checkpoint-reader.js";
import { planPrune, type PruneCandidate, type PruneContext } from "./prune-plan.js";
import { type FenceStamp, type FenceView, type PruneState, type ThreadFences, isVisible, readFenceEpoch } from "./thread-fences.js";

export interface PruneOptions {
  /** Latest checkpoints kept per namespace, besides turn boundaries and branch tips. Default: the saver's `checkpointsKept`. */
  keep?: number;
  /** The pruning writer's fence epoch: prune refuses with StaleWriterError when the thread is fenced higher. */
  fenceEpoch?: number;
  /** Examine every document of the thread, not only what was written since the prune before the last. Default: false. */
  full?: boolean;
}

/** Documents removed by one {@link CheckpointPruner.prune} call. */
export interface PruneResult {
  checkpoints: number;
  writes: number;
  blobs: number;
  /** Another prune of the thread held its lease: this one did nothing. */
  skipped?: true;
}

const keepSchema = z.number().int().positive();

/** How long a prune holds the thread's prune lease; a prune that outlives it is refused at its next write. */
export const PRUNE_LEASE_MS = 60_000;

/**
 * What {@link CheckpointPruner.compactStoredLists} did: threads compacted and skipped (being
 * pruned), list documents rewritten, their items' bytes before and after.
 */
export interface StoredListCompaction {
  threads: number;
  skipped: number;
  rewritten: number;
  itemBytesBefore: number;
  itemBytesAfter: number;
}
/** Seconds a prune's watermark lags the newest document it examined: ObjectIds of one second are not ordered. */
const PRUNE_OVERLAP_SECONDS = 1;
/** Root checkpoints older than the watermark examined beyond `keep`, for those not visible. */
const PRUNE_LATEST_SLACK = 4;

/** Epochs below the fence whose marks prune lets accumulate before it compacts them. */
const SEALED_EPOCHS_PER_COMPACTION = 8;

/** What a {@link CheckpointPruner} works on: the saver's collections, blob store and fences. */
export interface CheckpointPrunerOptions {
  checkpoints: Collection<CheckpointDocument>;
  writes: Collection<WriteDocument>;
  blobCollection: Collection<BlobDocument>;
  blobs: ChannelBlobStore;
  fences: ThreadFences;
  serde: SerializerProtocol;
  /** How headers are sealed (prune reads their versions and metadata). Default: clear. */
  seal?: HeaderSeal;
  /** Checkpoints per namespace kept when a prune names no `keep`. */
  checkpointsKept: number;
  /** Bytes above which a stored list link is compacted (see `compactStoredLists`). */
  linkBytes: number;
}

/**
 * The removing side of the checkpointer: `prune` (what a thread no longer needs, under the
 * thread's prune lease, examining only what is new since the prune before the last) and
 * `compactStoredLists` (the rewrite of list versions stored whole by earlier releases). The
 * plan of what a prune keeps is `planPrune`; the blobs are pruned by `BlobPruner`.
 */
export class CheckpointPruner {
  private readonly checkpoints: Collection<CheckpointDocument>;
  private readonly writes: Collection<WriteDocument>;
  private readonly blobs: ChannelBlobStore;
  private readonly blobPruner: BlobPruner;
  private readonly fences: ThreadFences;
  private readonly serde: SerializerProtocol;

  constructor(private readonly options: CheckpointPrunerOptions) {
    this.checkpoints = options.checkpoints;
    this.writes = options.writes;
    this.blobs = options.blobs;
    this.blobPruner = options.blobs.pruner();
    this.fences = options.fences;
    this.serde = options.serde;
  }

  /**
   * Compacts what earlier releases stored of list channels (the message list) in the old form: a
   * whole copy of the list at every turn boundary (issue 28), in documents growing with the thread.
   * Each such version becomes a link on the older version its list starts with, split into links
   * of at most the link size (see `BlobPruner.compactLists`): nothing a checkpoint reads
   * changes, and every document is bounded again. Every thread, or only `threadId`; a thread whose
   * prune is running is skipped (its prune lease is taken, as prune takes it) and counted. A step of
   * database set-up (migration 002, `lib/store/migrations/`), run once per database; safe to run again.
   */
  async compactStoredLists(threadId?: string): Promise<StoredListCompaction> {
    const result: StoredListCompaction = { threads: 0, skipped: 0, rewritten: 0, itemBytesBefore: 0, itemBytesAfter: 0 };
    const blobs = this.options.blobCollection;
    const filter: Filter<BlobDocument> = {
      type: "list",
      ...(threadId === undefined ? {} : { thread_id: threadId }),
      $or: [{ base: { $exists: false } }, { bytes: { $gt: this.options.linkBytes } }],
    };
    const namespaces = new Map<string, Set<string>>();
    for await (const doc of blobs.find(filter, { projection: { thread_id: 1, checkpoint_ns: 1 } })) {
      namespaces.set(doc.thread_id, (namespaces.get(doc.thread_id) ?? new Set()).add(doc.checkpoint_ns));
    }
    for (const [thread, nss] of namespaces) {
      const view = await this.fences.view(thread);
      const taken = view === null ? undefined : await this.fences.beginPrune(thread, undefined, PRUNE_LEASE_MS);
      if (view !== null && taken === undefined) {
        result.skipped += 1;
        continue;
      }
      const guard = taken === undefined ? async () => {} : () => this.fences.assertPruning(thread, undefined, taken.token);
      try {
        for (const checkpoint_ns of nss) {
          const done = await this.blobPruner.compactLists({ thread_id: thread, checkpoint_ns }, guard);
          result.rewritten += done.rewritten;
          result.itemBytesBefore += done.itemBytesBefore;
          result.itemBytesAfter += done.itemBytesAfter;
        }
        result.threads += 1;
      } finally {
        if (taken !== undefined) await this.fences.endPrune(thread, taken.token, undefined);
      }
    }
    return result;
  }

  /**
   * Removes what a thread no longer needs: in the root namespace, checkpoints inside finished
   * runs (every turn's start and end, branch tips and the latest `keep` stay; see `planPrune`),
   * subgraph namespaces of removed root checkpoints whole, the writes of removed checkpoints, values no kept
   * checkpoint reaches, and what stale fenced writers left; then merges each turn's list links.
   *
   * On a thread with a fence, one prune runs at a time (a lease on the fence document; a prune that
   * finds the lease held returns `skipped`), every write it makes is preceded by a check that it
   * still holds the lease and the fence, and it examines only what was written since the prune
   * before the previous one (`_id` watermarks on the fence document), so that its work does not
   * grow with the thread: checkpoints kept as run starts stay kept and are not read again. Pass
   * `full` to examine the whole thread (compaction of threads written by earlier releases).
   * Without a fence document every prune examines the whole thread. Safe while a writer of the thread
   * runs (it removes only what it listed and values older than every kept one), but meant for
   * between turns; pass `fenceEpoch` so that a stale writer's prune is refused.
   * @throws StaleWriterError when `fenceEpoch` is below the thread's fence, or the prune lost its
   *   lease or its fence before one of its writes (what it wrote before stays consistent).
   */
  async prune(threadId: string, options: PruneOptions = {}): Promise<PruneResult> {
    if (typeof threadId !== "string") throw new ValidationError("threadId must be a string");
    const keep = parseOrThrow(keepSchema, options.keep ?? this.options.checkpointsKept, "invalid keep");
    const fenceEpoch = options.fenceEpoch === undefined ? undefined : readFenceEpoch(options.fenceEpoch);
    let view: FenceView;
    let lease: number | undefined;
    if (fenceEpoch === undefined) view = await this.fences.view(threadId);
    else view = await this.fences.assertHeld(threadId, fenceEpoch);
    if (view !== null) {
      const taken = await this.fences.beginPrune(threadId, fenceEpoch, PRUNE_LEASE_MS);
      if (taken === undefined) return { checkpoints: 0, writes: 0, blobs: 0, skipped: true };
      lease = taken.token;
      view = taken.view;
    }
    const guard = lease === undefined ? async () => {} : () => this.fences.assertPruning(threadId, fenceEpoch, lease as number);
    try {
      const { result, next } = await this.pruneExamined(threadId, keep, view, options.full === true ? undefined : view?.prune, guard);
      if (lease !== undefined) await this.fences.endPrune(threadId, lease, next);
      return result;
    } catch (error) {
      if (lease !== undefined) await this.fences.endPrune(threadId, lease, undefined).catch(() => undefined);
      throw error;
    }
  }

  private async pruneExamined(
    threadId: string,
    keep: number,
    view: FenceView,
    state: PruneState | undefined,
    guard: () => Promise<void>,
  ): Promise<{ result: PruneResult; next: PruneState }> {
    const sealed = (epoch: number) => view === null || epoch < view.fence;
    const since = state?.since;
    const docs = await this.examinedHeaders(threadId, keep, since, state?.keep);
    const visible = docs.filter((doc) => isVisible(doc, view));
    const decoded = new Map(
      await Promise.all(
        visible.map(async (doc) => [doc._id.toHexString(), await decodeHeader(doc, this.serde, this.options.seal, { metadata: false })] as const),
      ),
    );
    const candidates: PruneCandidate[] = visible.map((doc) => {
      const metadata: Record<string, unknown> = decoded.get(doc._id.toHexString())?.metadata ?? {};
      return {
        checkpoint_ns: doc.checkpoint_ns,
        checkpoint_id: doc.checkpoint_id,
        parent_checkpoint_id: doc.parent_checkpoint_id ?? undefined,
        source: metadata.source as string | undefined,
        parents: metadata.parents as Record<string, string> | undefined,
        replaysWrites: metadata.delta_writes_versioned === true || metadata.counters_since_delta_snapshot !== undefined,
      };
    });
    const rootReplays = state?.rootReplays === true || candidates.some((c) => c.checkpoint_ns === "" && c.replaysWrites === true);
    const context = since === undefined ? undefined : await this.pruneContext(threadId, since, candidates, view, rootReplays);
    const plan = planPrune(candidates, keep, context);
    const dropped = (doc: CheckpointDocument) => plan.finished.has(doc.checkpoint_ns) || (plan.drop.get(doc.checkpoint_ns) ?? []).includes(doc.checkpoint_id);
    const junk = docs.filter((doc) => !isVisible(doc, view) && sealed(doc.epoch ?? -1));
    const removed = [...visible.filter(dropped), ...junk];
    const result: PruneResult = { checkpoints: 0, writes: 0, blobs: 0 };
    if (removed.length > 0) {
      await guard();
      result.checkpoints += (await this.checkpoints.deleteMany({ _id: { $in: removed.map((d) => d._id) } })).deletedCount;
      for (const [ns, ids] of groupIds(removed)) {
        result.writes += (await this.writes.deleteMany({ thread_id: threadId, checkpoint_ns: ns, checkpoint_id: { $in: ids } })).deletedCount;
      }
    }
    for (const ns of plan.finished) {
      await guard();
      result.checkpoints += (await this.checkpoints.deleteMany({ thread_id: threadId, checkpoint_ns: ns })).deletedCount;
      result.writes += (await this.writes.deleteMany({ thread_id: threadId, checkpoint_ns: ns })).deletedCount;
      result.blobs += await this.blobs.deleteNamespace({ thread_id: threadId, checkpoint_ns: ns });
    }
    const kept = visible.filter((doc) => !dropped(doc));
    for (const ns of new Set(kept.map((doc) => doc.checkpoint_ns))) {
      const roots = kept.filter((doc) => doc.checkpoint_ns === ns).flatMap((doc) => [...(decoded.get(doc._id.toHexString()) as DecodedHeader).keys]);
      result.blobs += await this.blobPruner.prune({ thread_id: threadId, checkpoint_ns: ns }, roots, sealed, { since, guard });
    }
    if (view !== null) {
      await guard();
      const compacted = await this.compactSealedEpochs(threadId, view);
      result.checkpoints += compacted.checkpoints;
      result.writes += compacted.writes;
    }
    // The next prune examines what this one examined as new, and what was written since.
    const newest = docs.reduce<ObjectId | undefined>(
      (max, doc) => (max === undefined || doc._id.getTimestamp() > max.getTimestamp() ? doc._id : max),
      undefined,
    );
    const next = newest === undefined ? state?.next : ObjectId.createFromTime(Math.floor(newest.getTimestamp().getTime() / 1000) - PRUNE_OVERLAP_SECONDS);
    const nextSince = state?.next ?? since;
    return { result, next: { ...(nextSince ? { since: nextSince } : {}), ...(next ? { next } : {}), keep, ...(rootReplays ? { rootReplays } : {}) } };
  }

  /**
   * The headers a prune examines: every one of the thread, or with a watermark, those inserted
   * since it, the root checkpoints that may have been kept only as the latest, the parents of the new
   * root checkpoints (which may no longer be branch tips) and every subgraph checkpoint (a
   * subgraph namespace keeps only its latest few).
   */
  private async examinedHeaders(
    threadId: string,
    keep: number,
    since: ObjectId | undefined,
    lastKeep: number | undefined,
  ): Promise<WithId<CheckpointDocument>[]> {
    if (since === undefined) return this.checkpoints.find({ thread_id: threadId }).toArray();
    const [recent, latest, subgraphs] = await Promise.all([
      this.checkpoints.find({ thread_id: threadId, _id: { $gte: since } }).toArray(),
      this.checkpoints
        .find({ thread_id: threadId, checkpoint_ns: "", _id: { $lt: since } })
        .sort({ checkpoint_id: -1 })
        .limit(Math.max(keep, lastKeep ?? keep) + PRUNE_LATEST_SLACK)
        .toArray(),
      this.checkpoints.find({ thread_id: threadId, checkpoint_ns: { $ne: "" }, _id: { $lt: since } }).toArray(),
    ]);
    const seen = new Set([...recent, ...latest, ...subgraphs].map((d) => d._id.toHexString()));
    const parents = [...new Set(recent.filter((d) => d.checkpoint_ns === "" && d.parent_checkpoint_id != null).map((d) => d.parent_checkpoint_id as string))];
    const known = new Set([...recent, ...latest].filter((d) => d.checkpoint_ns === "").map((d) => d.checkpoint_id));
    const missingParents = parents.filter((id) => !known.has(id));
    const older =
      missingParents.length === 0
        ? []
        : await this.checkpoints.find({ thread_id: threadId, checkpoint_ns: "", checkpoint_id: { $in: missingParents } }).toArray();
    return [...recent, ...latest, ...subgraphs, ...older.filter((d) => !seen.has(d._id.toHexString()))];
  }

  /**
   * What an incremental prune knows of the root checkpoints it did not examine: which examined
   * ones are parents of others (not branch tips), whether any replays writes (a DeltaChannel,
   * remembered in the prune state by the prune that examined it: every header is examined by the
   * prune after its insertion), and which owners of subgraph namespaces still exist (they are kept).
   */
  private async pruneContext(threadId: string, since: ObjectId, candidates: PruneCandidate[], view: FenceView, rootReplays: boolean): Promise<PruneContext> {
    const rootIds = candidates.filter((c) => c.checkpoint_ns === "").map((c) => c.checkpoint_id);
    const owners = [...new Set(candidates.flatMap((c) => (c.checkpoint_ns !== "" && c.parents?.[""] !== undefined ? [c.parents[""]] : [])))].filter(
      (id) => !rootIds.includes(id),
    );
    const [children, existing] = await Promise.all([
      this.checkpoints
        .find(
          { thread_id: threadId, checkpoint_ns: "", parent_checkpoint_id: { $in: rootIds }, _id: { $lt: since } },
          { projection: { thread_id: 1, parent_checkpoint_id: 1, epoch: 1, token: 1 } },
        )
        .toArray(),
      owners.length === 0
        ? []
        : this.checkpoints
            .find({ thread_id: threadId, checkpoint_ns: "", checkpoint_id: { $in: owners } }, { projection: { checkpoint_id: 1, epoch: 1, token: 1 } })
            .toArray(),
    ]);
    return {
      parentsElsewhere: new Set(children.filter((d) => isVisible(d, view)).map((d) => d.parent_checkpoint_id as string)),
      rootReplaysWrites: rootReplays,
      keptElsewhere: new Set(existing.filter((d) => isVisible(d, view)).map((d) => d.checkpoint_id)),
    };
  }

  /**
   * Once several epochs are below the fence, drops their commit tokens: committed documents keep
   * their epoch without a token (always visible), uncommitted ones are removed, then the marks are
   * forgotten. Batched, so that the fence document stays small without a rewrite every turn.
   */
  private async compactSealedEpochs(threadId: string, view: FenceView): Promise<{ checkpoints: number; writes: number }> {
    const sealed = Object.entries(view?.marks ?? {}).filter(([epoch]) => view !== null && Number(epoch) < view.fence);
    if (view === null || sealed.length < SEALED_EPOCHS_PER_COMPACTION) return { checkpoints: 0, writes: 0 };
    const collections = [this.checkpoints, this.writes] as unknown as Collection<FenceStamp & { thread_id: string }>[];
    for (const collection of collections) {
      for (const [epoch, mark] of sealed) {
        await collection.updateMany({ thread_id: threadId, epoch: Number(epoch), token: { $lte: mark } }, { $unset: { token: "" } });
      }
    }
    const [checkpoints, writes] = await Promise.all(
      collections.map((collection) => collection.deleteMany({ thread_id: threadId, epoch: { $lt: view.fence }, token: { $exists: true } })),
    );
    await this.fences.forgetMarks(
      threadId,
      sealed.map(([epoch]) => epoch),
    );
    return { checkpoints: checkpoints.deletedCount, writes: writes.deletedCount };
  }
}

function groupIds(docs: CheckpointDocument[]): Map<string, string[]> {
  const byNamespace = new Map<string, string[]>();
  for (const doc of docs) byNamespace.set(doc.checkpoint_ns, [...(byNamespace.get(doc.checkpoint_ns) ?? []), doc.checkpoint_id]);
  return byNamespace;
}
