import type { RunnableConfig } from "@langchain/core/runnables";
import {
  TASKS,
  WRITES_IDX_MAP,
  compareWritesSortKeys,
  copyCheckpoint,
  getCheckpointId,
  maxChannelVersion,
  writesSortKey,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointPendingWrite,
  type CheckpointTuple,
  type PendingWrite,
  type SerializerProtocol,
} from "@langchain/langgraph-checkpoint";
import { MongoDBSaver } from "@langchain/langgraph-checkpoint-mongodb";
import { Binary, ObjectId, type AnyBulkWriteOperation, type Collection, type Document, type Filter, type MongoClient, type WithId } from "mongodb";
import { z } from "zod";
import { ChannelValueMissingError, CheckpointNotFoundError, ValidationError } from "../errors.js";
import { parseOrThrow } from "../validation.js";
import {
  type BlobReader,
  ChannelBlobStore,
  DEFAULT_LIST_LINK_BYTES,
  type BlobDocument,
  type BlobPosition,
  type ChannelWrite,
} from "./checkpoint/channel-blob-store.js";
import { nextChannelVersion } from "./checkpoint/channel-versions.js";
import {
  HEADER_FORMAT,
  HEADER_TYPE_PREFIX,
  decodeHeader,
  type CheckpointDocument,
  type DecodedHeader,
  type InlineValue,
} from "./checkpoint/checkpoint-header.js";
import { DEFAULT_MAX_DOCUMENT_BYTES, MONGODB_MAX_DOCUMENT_BYTES, assertDocumentFits } from "./checkpoint/document-size.js";
import { planPrune, type PruneCandidate, type PruneContext } from "./checkpoint/prune-plan.js";
import {
  ThreadFences,
  isVisible,
  readFenceEpoch,
  type FenceStamp,
  type FenceView,
  type PruneState,
  type ThreadFenceDocument,
} from "./checkpoint/thread-fences.js";
import { COLLECTIONS } from "./collections.js";
import { DEFAULT_CHECKPOINTS_KEPT } from "../config/database-config.js";

/** Collection of checkpoint headers (everything but channel values). */
export const DEFAULT_CHECKPOINTS_COLLECTION = COLLECTIONS.checkpoints;
/** Collection of pending writes, one document per write. */
export const DEFAULT_CHECKPOINT_WRITES_COLLECTION = COLLECTIONS.checkpointWrites;
/** Collection of channel values and list links, keyed by (thread, namespace, channel, version). */
export const DEFAULT_CHECKPOINT_BLOBS_COLLECTION = COLLECTIONS.checkpointBlobs;
/** Collection of per-thread fences (see {@link ThreadwiseSaver.claimThread}). */
export const DEFAULT_CHECKPOINT_THREADS_COLLECTION = COLLECTIONS.checkpointThreads;
/**
 * Serialized bytes up to which a channel value is kept in its checkpoint's header instead of a
 * blob document: the graph's small bookkeeping channels and short inputs cost no document.
 */
export const DEFAULT_INLINE_VALUE_BYTES = 4 * 1024;

export interface ThreadwiseSaverOptions {
  client: MongoClient;
  /** Database to use. Default: the client's default database. */
  dbName?: string;
  /** Default: {@link DEFAULT_CHECKPOINTS_COLLECTION}. */
  checkpointCollectionName?: string;
  /** Default: {@link DEFAULT_CHECKPOINT_WRITES_COLLECTION}. */
  checkpointWritesCollectionName?: string;
  /** Default: {@link DEFAULT_CHECKPOINT_BLOBS_COLLECTION}. */
  checkpointBlobsCollectionName?: string;
  /** Default: {@link DEFAULT_CHECKPOINT_THREADS_COLLECTION}. */
  checkpointThreadsCollectionName?: string;
  /**
   * Seconds of inactivity after which a thread's documents expire (TTL indexes on `upserted_at`,
   * created by `setup()`). Default: no expiry.
   */
  ttl?: number;
  /**
   * Milliseconds after its first write at which a document is set to expire (`expiresAt`, which
   * `RetentionPolicy` indexes and pushes forward while the conversation is active), so that
   * nothing a writer leaves behind outlives retention. Default: no `expiresAt`.
   */
  expiresAfterMs?: number;
  /** Largest document written, in BSON bytes. Default: {@link DEFAULT_MAX_DOCUMENT_BYTES}. */
  maxDocumentBytes?: number;
  /** Checkpoints per namespace kept by `prune()` when no `keep` is given. Default: {@link DEFAULT_CHECKPOINTS_KEPT}. */
  checkpointsKept?: number;
}

export interface PruneOptions {
  /** Latest checkpoints kept per namespace, besides turn boundaries and branch tips. Default: the saver's `checkpointsKept`. */
  keep?: number;
  /** The pruning writer's fence epoch: prune refuses with StaleWriterError when the thread is fenced higher. */
  fenceEpoch?: number;
  /** Examine every document of the thread, not only what was written since the prune before the last. Default: false. */
  full?: boolean;
}

/** Documents removed by one {@link ThreadwiseSaver.prune} call. */
export interface PruneResult {
  checkpoints: number;
  writes: number;
  blobs: number;
  /** Another prune of the thread held its lease: this one did nothing. */
  skipped?: true;
}

const optionsSchema = z.object({
  ttl: z.number().int().positive().optional(),
  expiresAfterMs: z.number().int().positive().optional(),
  maxDocumentBytes: z.number().int().positive().max(MONGODB_MAX_DOCUMENT_BYTES).optional(),
  checkpointsKept: z.number().int().positive().optional(),
});

const keepSchema = z.number().int().positive();

/** How long a prune holds the thread's prune lease; a prune that outlives it is refused at its next write. */
export const PRUNE_LEASE_MS = 60_000;

/**
 * What {@link ThreadwiseSaver.compactStoredLists} did: threads compacted and skipped (being
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

interface WriteDocument extends FenceStamp {
  thread_id: string;
  checkpoint_ns: string;
  checkpoint_id: string;
  task_id: string;
  task_path?: string;
  idx: number;
  channel: string;
  type: string;
  value: Binary;
}

/** Where the channels of a new checkpoint are: blobs to write, blob keys, values in the header, channels without a value. */
interface ChannelPlan {
  writes: ChannelWrite[];
  keys: Map<string, string>;
  inline: Map<string, InlineValue>;
  absent: string[];
}

function readConfigString(name: string, value: unknown, required = false): string | undefined {
  if (value === undefined || value === "") {
    if (required) throw new ValidationError(`configurable.${name} is required`);
    return undefined;
  }
  if (typeof value !== "string") throw new ValidationError(`configurable.${name} must be a string`);
  return value;
}

function parseOptions<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  return parseOrThrow(schema, value, `invalid ${what}`);
}

/**
 * A `MongoDBSaver` whose storage stays linear in the length of a thread, whose branches never
 * touch each other, and whose writers can be fenced.
 *
 * Stock `MongoDBSaver` serializes every channel value into every checkpoint, so the growing
 * message list is copied once per step and a thread's storage grows quadratically. This saver
 * stores each channel value once per version in `checkpoint_blobs`, writes only the versions
 * `put` is told are new (as the Postgres and SQLite savers do) and reassembles `channel_values`
 * on read. A list value (the message list) is stored as links: a new version stores only the
 * items appended since its parent checkpoint's version (see {@link ChannelBlobStore}).
 *
 * - Channel versions are a counter plus a random fraction ({@link getNextVersion}), so a fork
 *   (or a second writer) never reuses a version, and a stored value is never overwritten.
 * - A checkpoint whose parent does not exist is refused with CheckpointNotFoundError, and a
 *   stored checkpoint whose value is missing fails to read with ChannelValueMissingError.
 * - Fencing: see {@link claimThread}.
 * - Checkpoints written by stock `MongoDBSaver` or earlier releases are read as written; the
 *   first checkpoint written after one stores its values anew (docs/storage.md, "Checkpoint storage").
 * - {@link prune} keeps every turn's start and end and the latest few checkpoints, and removes
 *   the rest, the subgraph namespaces of removed checkpoints, and the values nothing kept reaches.
 *
 * Every document is measured before it is written and refused with `DocumentTooLargeError`
 * above `maxDocumentBytes`.
 */
export class ThreadwiseSaver extends MongoDBSaver {
  readonly checkpointBlobsCollectionName: string;
  readonly checkpointThreadsCollectionName: string;
  readonly maxDocumentBytes: number;
  readonly checkpointsKept: number;
  private readonly expiresAfterMs?: number;
  private readonly blobs: ChannelBlobStore;
  private readonly linkBytes: number;
  private readonly fences: ThreadFences;

  constructor(options: ThreadwiseSaverOptions, serde?: SerializerProtocol) {
    const checked = parseOptions(optionsSchema, options, "checkpointer options");
    super(
      {
        client: options.client,
        dbName: options.dbName,
        checkpointCollectionName: options.checkpointCollectionName ?? DEFAULT_CHECKPOINTS_COLLECTION,
        checkpointWritesCollectionName: options.checkpointWritesCollectionName ?? DEFAULT_CHECKPOINT_WRITES_COLLECTION,
        ttl: checked.ttl,
      },
      serde,
    );
    this.checkpointBlobsCollectionName = options.checkpointBlobsCollectionName ?? DEFAULT_CHECKPOINT_BLOBS_COLLECTION;
    this.checkpointThreadsCollectionName = options.checkpointThreadsCollectionName ?? DEFAULT_CHECKPOINT_THREADS_COLLECTION;
    this.maxDocumentBytes = checked.maxDocumentBytes ?? DEFAULT_MAX_DOCUMENT_BYTES;
    this.checkpointsKept = checked.checkpointsKept ?? DEFAULT_CHECKPOINTS_KEPT;
    this.expiresAfterMs = checked.expiresAfterMs;
    this.fences = new ThreadFences(this.db.collection<ThreadFenceDocument>(this.checkpointThreadsCollectionName), () => this.stamp());
    // Links well under the document limit leave room for the link's own fields.
    const linkBytes = Math.min(DEFAULT_LIST_LINK_BYTES, Math.floor(this.maxDocumentBytes / 2));
    this.linkBytes = linkBytes;
    this.blobs = new ChannelBlobStore(this.db.collection<BlobDocument>(this.checkpointBlobsCollectionName), this.serde, {
      maxDocumentBytes: this.maxDocumentBytes,
      linkBytes,
    });
  }

  private get checkpoints(): Collection<CheckpointDocument> {
    return this.db.collection<CheckpointDocument>(this.checkpointCollectionName);
  }

  private get writes(): Collection<WriteDocument> {
    return this.db.collection<WriteDocument>(this.checkpointWritesCollectionName);
  }

  /**
   * `upserted_at`, which the TTL indexes expire on, when a ttl is set (from the client clock
   * rather than with `$currentDate`, which the embedded server used locally does not support),
   * and `expiresAt` when `expiresAfterMs` is set.
   */
  private stamp(): { upserted_at?: Date; expiresAt?: Date } {
    const now = new Date();
    return {
      ...(this.enableTimestamps ? { upserted_at: now } : {}),
      ...(this.expiresAfterMs === undefined ? {} : { expiresAt: new Date(now.getTime() + this.expiresAfterMs) }),
    };
  }

  /**
   * Creates the indexes of the four collections, and the `upserted_at` TTL indexes when a ttl is
   * set. Idempotent; returns the errors (empty when every index exists) for the caller to check.
   */
  override async setup(): Promise<Error[]> {
    const fenceIndexes = this.ttl != null ? [this.fences.collection.createIndex({ upserted_at: 1 }, { expireAfterSeconds: this.ttl })] : [];
    const [baseErrors, results] = await Promise.all([super.setup(), Promise.allSettled([...this.blobs.createIndexes(this.ttl), ...fenceIndexes])]);
    const errors = results.filter((r) => r.status === "rejected").map((r) => r.reason as Error);
    return [...baseErrors, ...errors];
  }

  /**
   * Compacts what earlier releases stored of list channels (the message list) in the old form: a
   * whole copy of the list at every turn boundary (issue 28), in documents growing with the thread.
   * Each such version becomes a link on the older version its list starts with, split into links
   * of at most the link size (see `ChannelBlobStore.compactLists`): nothing a checkpoint reads
   * changes, and every document is bounded again. Every thread, or only `threadId`; a thread whose
   * prune is running is skipped (its prune lease is taken, as prune takes it) and counted. A step of
   * database set-up (`ThreadwiseDatabase.setup`), run once per database; safe to run again.
   */
  async compactStoredLists(threadId?: string): Promise<StoredListCompaction> {
    const result: StoredListCompaction = { threads: 0, skipped: 0, rewritten: 0, itemBytesBefore: 0, itemBytesAfter: 0 };
    const blobs = this.db.collection<BlobDocument>(this.checkpointBlobsCollectionName);
    const filter: Filter<BlobDocument> = {
      type: "list",
      ...(threadId === undefined ? {} : { thread_id: threadId }),
      $or: [{ base: { $exists: false } }, { bytes: { $gt: this.linkBytes } }],
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
          const done = await this.blobs.compactLists({ thread_id: thread, checkpoint_ns }, guard);
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
   * The version after `current`: its integer counter plus one, plus a random fraction. Unique
   * per branch and per writer, so a fork or a second writer never writes under a version another
   * checkpoint references; numeric, so it compares with the integer versions of stock threads.
   */
  override getNextVersion(current: string | number | undefined): number {
    return nextChannelVersion(current);
  }

  /**
   * Raises the thread's fence to `epoch`, creating its record if absent. From then on a `put` or
   * `putWrites` whose `configurable.fence_epoch` is below `epoch` is refused with
   * StaleWriterError, and nothing it wrote becomes visible: its commit is a conditional update of
   * the thread's fence record (see `ThreadFences`). Claiming the current epoch again is allowed.
   * An epoch belongs to one writer, and a thread's epochs only grow.
   * @throws StaleWriterError when the thread is already fenced at a higher epoch.
   */
  async claimThread(threadId: string, epoch: number): Promise<void> {
    await this.fences.claim(threadId, epoch);
  }

  override async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const thread_id = readConfigString("thread_id", config.configurable?.thread_id);
    if (thread_id === undefined) return undefined;
    const checkpoint_ns = readConfigString("checkpoint_ns", config.configurable?.checkpoint_ns) ?? "";
    const checkpoint_id = readConfigString("checkpoint_id", getCheckpointId(config));
    const query: Filter<CheckpointDocument> = checkpoint_id ? { thread_id, checkpoint_ns, checkpoint_id } : { thread_id, checkpoint_ns };
    const read = new ReadContext(this.fences, this.blobs.reader(true));
    const [newest] = await this.checkpoints.find(query).sort({ checkpoint_id: -1 }).limit(1).toArray();
    if (newest === undefined) return undefined;
    if (await read.visible(newest)) return this.loadTuple(newest, read);
    // A fenced write that was refused, or is not committed yet: the newest visible one is older.
    for await (const doc of this.checkpoints.find({ ...query, checkpoint_id: { $lt: newest.checkpoint_id } }).sort({ checkpoint_id: -1 })) {
      if (await read.visible(doc)) return this.loadTuple(doc, read);
    }
    return undefined;
  }

  override async *list(config: RunnableConfig, options?: CheckpointListOptions): AsyncGenerator<CheckpointTuple> {
    const { limit, before, filter } = options ?? {};
    const query: Filter<Document> = {};
    const thread_id = readConfigString("thread_id", config.configurable?.thread_id);
    const checkpoint_ns = config.configurable?.checkpoint_ns;
    if (thread_id !== undefined) query.thread_id = thread_id;
    if (checkpoint_ns !== undefined) {
      if (typeof checkpoint_ns !== "string") throw new ValidationError("configurable.checkpoint_ns must be a string");
      query.checkpoint_ns = checkpoint_ns;
    }
    for (const [key, value] of Object.entries(filter ?? {})) {
      if (value !== null && typeof value === "object") {
        throw new ValidationError(`list filter value of "${key}" must be a primitive`);
      }
      query[`metadata_search.${key}`] = value;
    }
    const beforeId = readConfigString("checkpoint_id", before?.configurable?.checkpoint_id);
    if (beforeId !== undefined) query.checkpoint_id = { $lt: beforeId };
    if (limit !== undefined && limit <= 0) return;
    const read = new ReadContext(this.fences, this.blobs.reader());
    let yielded = 0;
    for await (const doc of this.checkpoints.find(query).sort({ checkpoint_id: -1 })) {
      if (!(await read.visible(doc as CheckpointDocument))) continue;
      yield await this.loadTuple(doc as CheckpointDocument, read);
      yielded += 1;
      if (limit !== undefined && yielded >= limit) return;
    }
  }

  /**
   * Stores the checkpoint header and, as blobs, the channel values whose versions are in
   * `newVersions` (all of them when it is omitted); the other channels name the value their
   * parent checkpoint names. Every document is size-checked before the first write; blobs are
   * written before the header, so a header never points at missing blobs. With
   * `configurable.fence_epoch`, the header becomes visible only if the fence still allows the
   * epoch when it is committed (see {@link claimThread}).
   * @throws CheckpointNotFoundError when the parent checkpoint (`configurable.checkpoint_id`) does not exist.
   */
  override async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions?: ChannelVersions): Promise<RunnableConfig> {
    const thread_id = readConfigString("thread_id", config.configurable?.thread_id, true) as string;
    const checkpoint_ns = readConfigString("checkpoint_ns", config.configurable?.checkpoint_ns) ?? "";
    const parent_checkpoint_id = readConfigString("checkpoint_id", config.configurable?.checkpoint_id);
    const epoch = readFenceEpoch(config.configurable?.fence_epoch);
    const checkpoint_id = checkpoint.id;
    const position = { thread_id, checkpoint_ns };
    const header = copyCheckpoint(checkpoint);
    const values: Record<string, unknown> = header.channel_values;
    header.channel_values = {};

    const read = new ReadContext(this.fences, this.blobs.reader());
    const [view, parentDoc] = await Promise.all([
      // Fail fast: a writer already fenced out writes nothing at all.
      epoch === undefined ? undefined : this.fences.assertHeld(thread_id, epoch),
      parent_checkpoint_id === undefined ? undefined : this.checkpoints.findOne({ ...position, checkpoint_id: parent_checkpoint_id }),
    ]);
    if (view !== undefined) read.seed(thread_id, view);
    const parent = parent_checkpoint_id === undefined ? undefined : await this.parentOf(position, parent_checkpoint_id, parentDoc ?? null, read);
    const plan = await this.planChannels(position, checkpoint_id, header.channel_versions, newVersions ?? header.channel_versions, values, parent, read);
    const blobs = await this.blobs.prepare(position, plan.writes, `checkpoint ${checkpoint_id}`);

    const [[type, serializedCheckpoint], [metadataType, serializedMetadata]] = await Promise.all([
      this.serde.dumpsTyped(header),
      this.serde.dumpsTyped(metadata),
    ]);
    if (type !== metadataType) throw new Error("Mismatched checkpoint and metadata types.");
    const carried = [...plan.keys].filter(([channel, key]) => key !== String(header.channel_versions[channel]));
    const checkpointDoc: CheckpointDocument = {
      thread_id,
      checkpoint_ns,
      checkpoint_id,
      parent_checkpoint_id,
      type: `${HEADER_TYPE_PREFIX}${type}`,
      checkpoint: new Binary(serializedCheckpoint),
      metadata: new Binary(serializedMetadata),
      metadata_search: metadata,
      format: HEADER_FORMAT,
      ...(carried.length > 0 ? { blob_keys: Object.fromEntries(carried) } : {}),
      ...(plan.inline.size > 0 ? { inline_values: Object.fromEntries(plan.inline) } : {}),
      ...(plan.absent.length > 0 ? { absent: plan.absent } : {}),
    };
    assertDocumentFits(checkpointDoc, this.maxDocumentBytes, `checkpoint ${checkpoint_id}`);

    await this.blobs.write(blobs, { ...(epoch === undefined ? {} : { epoch }), ...this.stamp() });
    // Refreshed once per half TTL, so that nothing the thread still references expires.
    if (this.enableTimestamps) await this.blobs.touch(position, new Date(Date.now() - ((this.ttl ?? 0) * 1000) / 2));
    const key = { thread_id, checkpoint_ns, checkpoint_id };
    const writeHeader = (stamp: FenceStamp) => this.checkpoints.replaceOne(key, { ...checkpointDoc, ...stamp, ...this.stamp() }, { upsert: true });
    if (epoch === undefined) await writeHeader({});
    else
      await this.fences.write(
        thread_id,
        epoch,
        (token) => writeHeader({ epoch, token }),
        (token) => this.checkpoints.deleteOne({ ...key, epoch, token }),
      );
    return { configurable: { thread_id, checkpoint_ns, checkpoint_id } };
  }

  /** The visible parent header; anything else is a run from a checkpoint that no longer exists. */
  private async parentOf(
    position: BlobPosition,
    checkpointId: string,
    doc: CheckpointDocument | null,
    read: ReadContext,
  ): Promise<{ id: string; header: DecodedHeader }> {
    if (doc === null || !(await read.visible(doc))) {
      throw new CheckpointNotFoundError(
        `checkpoint ${checkpointId} of thread ${position.thread_id} does not exist (pruned, deleted or never written); nothing was written`,
        position.thread_id,
        position.checkpoint_ns,
        checkpointId,
      );
    }
    return { id: checkpointId, header: await decodeHeader(doc, this.serde) };
  }

  /**
   * Where each versioned channel's value goes. A channel at a version in `newVersions` is
   * written: a list as links, a small value inline in the header, a larger one as a blob, none
   * when the channel has no value. A channel at the version its parent (of this format) has
   * names what the parent names. One at the version of a legacy parent is written again from
   * `values` (a blob gets a key of its own: legacy versions may repeat across branches), and so
   * is one at a version a legacy header of the thread names, under a key of this checkpoint (a
   * copy of a stock checkpoint, see {@link namedByLegacy}). Any other names the blob stored under
   * its version if there is one, else what another header of this format names for that version
   * (see {@link namedElsewhere}), else no value.
   */
  private async planChannels(
    position: BlobPosition,
    checkpointId: string,
    versions: ChannelVersions,
    newVersions: ChannelVersions,
    values: Record<string, unknown>,
    parent: { id: string; header: DecodedHeader } | undefined,
    read: ReadContext,
  ): Promise<ChannelPlan> {
    const plan: ChannelPlan = { writes: [], keys: new Map(), inline: new Map(), absent: [] };
    const parentFormat = parent?.header.format === HEADER_FORMAT ? parent.header : undefined;
    // A list extends the version its parent names, when that version is a list link.
    const bases = new Map<string, string>();
    const store = async (channel: string, key: string, referenced: boolean) => {
      if (!(channel in values)) {
        if (referenced) plan.absent.push(channel);
        return;
      }
      const value = values[channel];
      if (Array.isArray(value)) {
        const baseKey = parentFormat?.keys.get(channel);
        if (baseKey !== undefined) bases.set(channel, baseKey);
        plan.writes.push({ channel, key, list: value });
        if (referenced) plan.keys.set(channel, key);
        return;
      }
      const [type, bytes] = await this.serde.dumpsTyped(value);
      if (referenced && bytes.byteLength <= DEFAULT_INLINE_VALUE_BYTES) {
        plan.inline.set(channel, { type, blob: new Binary(bytes) });
        return;
      }
      plan.writes.push({ channel, key, serialized: { type, bytes } });
      if (referenced) plan.keys.set(channel, key);
    };
    const unknown: [string, string][] = [];
    for (const [channel, version] of Object.entries(newVersions)) await store(channel, String(version), versions[channel] === version);
    for (const [channel, version] of Object.entries(versions)) {
      if (newVersions[channel] === version) continue;
      const inherited = parent?.header.checkpoint.channel_versions[channel] === version ? parent : undefined;
      if (inherited !== undefined && parentFormat !== undefined) {
        const inline = parentFormat.inline.get(channel);
        const key = parentFormat.keys.get(channel);
        if (inline !== undefined) plan.inline.set(channel, inline);
        else if (key !== undefined) plan.keys.set(channel, key);
        else plan.absent.push(channel);
      } else if (inherited !== undefined) {
        await store(channel, `${version}~${inherited.id}`, true);
      } else {
        unknown.push([channel, String(version)]);
      }
    }
    const legacy = await this.namedByLegacy(position, unknown, read);
    for (const [channel, key] of legacy) await store(channel, `${key}~${checkpointId}`, true);
    const byVersion = unknown.filter(([channel]) => !legacy.has(channel));
    const stored = await this.blobs.stored(position, byVersion);
    const elsewhere = await this.namedElsewhere(
      position,
      byVersion.filter(([channel, key]) => !stored.has(`${channel}\u0000${key}`)),
      read,
    );
    for (const [channel, key] of byVersion) {
      const named = elsewhere.get(channel);
      if (stored.has(`${channel}\u0000${key}`)) plan.keys.set(channel, key);
      else if (named?.inline !== undefined) plan.inline.set(channel, named.inline);
      else if (named?.key !== undefined) plan.keys.set(channel, named.key);
      else plan.absent.push(channel);
    }
    const heads = await this.blobs.listHeads(position, bases);
    for (const w of plan.writes) if ("list" in w) w.base = heads.get(w.channel);
    return plan;
  }

  /**
   * Which of the wanted channels are at an integer version that a legacy header (stock
   * `MongoDBSaver`'s) of the thread names. Stock counts versions up from the same numbers on
   * every branch, so such a version does not say which value it is: a copy of a stock checkpoint
   * writes its values again rather than take another branch's (or none) by version. Versions
   * this saver makes are never integers (see {@link getNextVersion}), so only copies of legacy
   * checkpoints pay for this read.
   */
  private async namedByLegacy(position: BlobPosition, wanted: [string, string][], read: ReadContext): Promise<Map<string, string>> {
    const found = new Map<string, string>();
    const pending = new Map(wanted.filter(([, key]) => Number.isInteger(Number(key))));
    if (pending.size === 0) return found;
    for await (const doc of this.checkpoints.find({ ...position, format: { $ne: HEADER_FORMAT } })) {
      if (!(await read.visible(doc))) continue;
      const versions = (await decodeHeader(doc, this.serde)).checkpoint.channel_versions;
      for (const [channel, key] of pending) {
        if (String(versions[channel]) !== key) continue;
        pending.delete(channel);
        found.set(channel, key);
      }
      if (pending.size === 0) break;
    }
    return found;
  }

  /**
   * Where the visible headers of this format, newest first, keep each channel's value at the
   * given version: in the header, or under a blob key of its own. A put names a version neither
   * new nor its parent's when it copies a checkpoint (`updateState` as `__copy__` puts its source's
   * versions, none new, under the source's parent); a value kept in the source's header is found
   * only here. Versions are unique per writer (see {@link getNextVersion}), so any header naming
   * one holds its value.
   */
  private async namedElsewhere(
    position: BlobPosition,
    wanted: [string, string][],
    read: ReadContext,
  ): Promise<Map<string, { inline?: InlineValue; key?: string }>> {
    const found = new Map<string, { inline?: InlineValue; key?: string }>();
    const pending = new Map(wanted);
    if (pending.size === 0) return found;
    for await (const doc of this.checkpoints.find({ ...position, format: HEADER_FORMAT }).sort({ checkpoint_id: -1 })) {
      if (!(await read.visible(doc))) continue;
      const header = await decodeHeader(doc, this.serde);
      for (const [channel, key] of pending) {
        if (String(header.checkpoint.channel_versions[channel]) !== key) continue;
        pending.delete(channel);
        found.set(channel, { inline: header.inline.get(channel), key: header.keys.get(channel) });
      }
      if (pending.size === 0) break;
    }
    return found;
  }

  /**
   * Stores intermediate writes as stock does, plus the task path that orders them on read, each
   * document size-checked before any is written. With `configurable.fence_epoch`, the writes
   * become visible only if the fence still allows the epoch when they are committed. A write to a
   * checkpoint not stored yet is accepted: LangGraph writes a task's results while the put of
   * their checkpoint may still be in flight.
   */
  override async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath?: string): Promise<void> {
    const thread_id = readConfigString("thread_id", config.configurable?.thread_id, true) as string;
    const checkpoint_ns = readConfigString("checkpoint_ns", config.configurable?.checkpoint_ns) ?? "";
    const checkpoint_id = readConfigString("checkpoint_id", config.configurable?.checkpoint_id, true) as string;
    const epoch = readFenceEpoch(config.configurable?.fence_epoch);
    const allSpecial = writes.every(([channel]) => channel in WRITES_IDX_MAP);
    const prepared = await Promise.all(
      writes.map(async ([channel, value], idx) => {
        // Each epoch writes documents of its own, so a stale writer never overwrites a newer one's.
        const filter = { thread_id, checkpoint_ns, checkpoint_id, task_id: taskId, idx: WRITES_IDX_MAP[channel] ?? idx, epoch: epoch ?? null };
        const [type, serialized] = await this.serde.dumpsTyped(value);
        const fields = { channel, type, value: new Binary(serialized), task_path: taskPath ?? "" };
        assertDocumentFits({ ...filter, ...fields }, this.maxDocumentBytes, `write to "${channel}" of task ${taskId}`);
        return { filter, fields };
      }),
    );
    if (prepared.length === 0) return;
    const writeAll = (stamp: FenceStamp) =>
      this.writes.bulkWrite(
        prepared.map(({ filter, fields }): AnyBulkWriteOperation<WriteDocument> => {
          const set = { ...fields, ...stamp, ...this.stamp() };
          // Special writes (errors, interrupts) replace earlier ones; regular writes are kept once.
          return { updateOne: { filter, update: allSpecial ? { $set: set } : { $setOnInsert: set }, upsert: true } };
        }),
      );
    if (epoch === undefined) await writeAll({});
    else {
      const taskWrites = { thread_id, checkpoint_ns, checkpoint_id, task_id: taskId, epoch };
      await this.fences.write(
        thread_id,
        epoch,
        (token) => writeAll({ token }),
        (token) => this.writes.deleteMany({ ...taskWrites, token }),
      );
    }
  }

  /**
   * Removes every checkpoint, write and blob of the thread, in every namespace, and its fence
   * first: a fenced writer still running is refused from then on and leaves nothing visible.
   */
  override async deleteThread(threadId: string): Promise<void> {
    if (typeof threadId !== "string") throw new ValidationError("threadId must be a string");
    await this.fences.remove(threadId);
    await Promise.all([
      this.checkpoints.deleteMany({ thread_id: threadId }),
      this.writes.deleteMany({ thread_id: threadId }),
      this.blobs.deleteThread(threadId),
    ]);
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
    const keep = parseOptions(keepSchema, options.keep ?? this.checkpointsKept, "keep");
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
    const decoded = new Map(await Promise.all(visible.map(async (doc) => [doc._id.toHexString(), await decodeHeader(doc, this.serde)] as const)));
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
      result.blobs += await this.blobs.prune({ thread_id: threadId, checkpoint_ns: ns }, roots, sealed, { since, guard });
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
    const collections = [this.checkpointCollectionName, this.checkpointWritesCollectionName].map((name) =>
      this.db.collection<FenceStamp & { thread_id: string }>(name),
    );
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

  private async loadTuple(doc: CheckpointDocument, read: ReadContext): Promise<CheckpointTuple> {
    const { thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id } = doc;
    const position = { thread_id, checkpoint_ns };
    const [header, pendingWrites] = await Promise.all([decodeHeader(doc, this.serde), this.loadWrites(position, checkpoint_id, read)]);
    const checkpoint = header.checkpoint;
    checkpoint.channel_values = await this.loadValues(position, header, read.blobs);
    if (checkpoint.v < 4 && parent_checkpoint_id != null) {
      await this.migratePendingSends(checkpoint, position, parent_checkpoint_id, read);
    }
    return {
      config: { configurable: { thread_id, checkpoint_ns, checkpoint_id } },
      checkpoint,
      metadata: header.metadata,
      pendingWrites: pendingWrites.map(({ taskId, channel, value }) => [taskId, channel, value] as CheckpointPendingWrite),
      parentConfig: parent_checkpoint_id != null ? { configurable: { thread_id, checkpoint_ns, checkpoint_id: parent_checkpoint_id } } : undefined,
    };
  }

  /**
   * The channel values of a header. This format: every versioned channel not stored as absent
   * must be stored, or reading fails. A legacy header: the values stock `MongoDBSaver` stored
   * inline, else (earlier releases) the blobs stored under each version, where there are any.
   */
  private async loadValues(position: BlobPosition, header: DecodedHeader, blobs: BlobReader): Promise<Record<string, unknown>> {
    const stockValues = header.checkpoint.channel_values ?? {};
    if (header.format !== HEADER_FORMAT && Object.keys(stockValues).length > 0) return stockValues;
    const keys = header.keys;
    const { values, missing } = await blobs.read(position, keys);
    for (const [channel, { type, blob }] of header.inline) values[channel] = await this.serde.loadsTyped(type, blob.buffer);
    if (header.format === HEADER_FORMAT && missing.length > 0) {
      const channel = missing[0];
      const key = keys.get(channel) as string;
      throw new ChannelValueMissingError(
        `checkpoint ${header.checkpoint.id} of thread ${position.thread_id} names channel "${channel}" version ${key}, which is not stored`,
        position.thread_id,
        channel,
        key,
      );
    }
    return values;
  }

  /**
   * The checkpoint's visible writes in `writesSortKey` order, the order live execution applies
   * them in. Where writers of several epochs wrote the same task's write, the latest epoch's counts.
   */
  private async loadWrites(
    position: BlobPosition,
    checkpoint_id: string,
    read: ReadContext,
    channel?: string,
  ): Promise<{ taskId: string; channel: string; value: unknown }[]> {
    const found = await this.writes.find(channel === undefined ? { ...position, checkpoint_id } : { ...position, checkpoint_id, channel }).toArray();
    const latest = new Map<string, WriteDocument>();
    for (const doc of found) {
      if (!(await read.visible(doc))) continue;
      const key = JSON.stringify([doc.task_id, doc.idx]);
      const other = latest.get(key);
      if (other === undefined || (other.epoch ?? -1) < (doc.epoch ?? -1)) latest.set(key, doc);
    }
    const docs = [...latest.values()];
    docs.sort((a, b) => compareWritesSortKeys(writesSortKey(a.task_path ?? "", a.task_id, a.idx), writesSortKey(b.task_path ?? "", b.task_id, b.idx)));
    return Promise.all(
      docs.map(async (doc) => ({
        taskId: doc.task_id,
        channel: doc.channel,
        value: await this.serde.loadsTyped(doc.type, doc.value.buffer),
      })),
    );
  }

  /**
   * Checkpoints before format v4 kept pending sends as `TASKS` writes on their parent; the
   * base spec expects them to surface as the `TASKS` channel of the child.
   */
  private async migratePendingSends(checkpoint: Checkpoint, position: BlobPosition, parentId: string, read: ReadContext): Promise<void> {
    const sends = await this.loadWrites(position, parentId, read, TASKS);
    const existing = Object.values(checkpoint.channel_versions);
    checkpoint.channel_values[TASKS] = sends.map((w) => w.value);
    // Read deterministically: the same checkpoint reads back the same versions every time.
    checkpoint.channel_versions[TASKS] = existing.length > 0 ? maxChannelVersion(...existing) : 1;
  }
}

function groupIds(docs: CheckpointDocument[]): Map<string, string[]> {
  const byNamespace = new Map<string, string[]>();
  for (const doc of docs) byNamespace.set(doc.checkpoint_ns, [...(byNamespace.get(doc.checkpoint_ns) ?? []), doc.checkpoint_id]);
  return byNamespace;
}

/** What one read call shares: the fences of the threads it touches (each read once) and a blob reader. */
class ReadContext {
  private readonly views = new Map<string, Promise<FenceView>>();

  constructor(
    private readonly fences: ThreadFences,
    readonly blobs: BlobReader,
  ) {}

  /** Uses a fence already read for the thread. */
  seed(threadId: string, view: FenceView): void {
    this.views.set(threadId, Promise.resolve(view));
  }

  /** Whether readers see the document (unfenced or committed; see `isVisible`). */
  async visible(doc: FenceStamp & { thread_id: string }): Promise<boolean> {
    if (doc.token === undefined || doc.token === null) return true;
    let view = this.views.get(doc.thread_id);
    if (view === undefined) this.views.set(doc.thread_id, (view = this.fences.view(doc.thread_id)));
    return isVisible(doc, await view);
  }
}
