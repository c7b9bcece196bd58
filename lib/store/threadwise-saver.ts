import type { RunnableConfig } from "@langchain/core/runnables";
import {
  WRITES_IDX_MAP,
  copyCheckpoint,
  getCheckpointId,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointTuple,
  type PendingWrite,
  type SerializerProtocol,
} from "@langchain/langgraph-checkpoint";
import { MongoDBSaver } from "@langchain/langgraph-checkpoint-mongodb";
import { type AnyBulkWriteOperation, Binary, type Collection, type Document, type Filter, type MongoClient } from "mongodb";
import { z } from "zod";
import type { ContentCipher } from "../crypto/content-cipher.js";
import { ValidationError } from "../errors.js";
import { parseOrThrow } from "../validation.js";
import { ChannelBlobStore, DEFAULT_LIST_LINK_BYTES, type BlobDocument } from "./checkpoint/channel-blob-store.js";
import { ChannelPlanner } from "./checkpoint/channel-planner.js";
import { nextChannelVersion } from "./checkpoint/channel-versions.js";
import { CheckpointContents, checkpointRefs } from "./checkpoint/checkpoint-contents.js";
import { HEADER_FORMAT, HEADER_TYPE_PREFIX, type CheckpointDocument, type HeaderSeal } from "./checkpoint/checkpoint-header.js";
import { CheckpointResealer, type CheckpointReseal, type NeedsReseal } from "./checkpoint/checkpoint-resealer.js";
import { CheckpointPruner, type PruneOptions, type PruneResult, type StoredListCompaction } from "./checkpoint/checkpoint-pruner.js";
import { CheckpointReader, type WriteDocument } from "./checkpoint/checkpoint-reader.js";
import { DEFAULT_MAX_DOCUMENT_BYTES, MONGODB_MAX_DOCUMENT_BYTES, assertDocumentFits } from "./checkpoint/document-size.js";
import { ThreadFences, readFenceEpoch, type FenceStamp, type ThreadFenceDocument } from "./checkpoint/thread-fences.js";
import { COLLECTIONS } from "./collections.js";
import { DEFAULT_CHECKPOINTS_KEPT } from "../config/database-config.js";

export { DEFAULT_INLINE_VALUE_BYTES } from "./checkpoint/channel-planner.js";
export { PRUNE_LEASE_MS, type PruneOptions, type PruneResult, type StoredListCompaction } from "./checkpoint/checkpoint-pruner.js";
export type { CheckpointReseal, NeedsReseal, StoredValue } from "./checkpoint/checkpoint-resealer.js";

/**
 * Metadata keys kept clear in `metadata_search` when contents are encrypted: LangGraph's own
 * bookkeeping (what `list` filters on in the database, and what prune reads without decrypting). A
 * filter on any other key is applied to the metadata as read back (docs/storage.md, "Checkpoint storage").
 */
export const CLEAR_METADATA_KEYS = ["source", "step", "parents", "delta_writes_versioned", "counters_since_delta_snapshot"] as const;

/** Collection of checkpoint headers (everything but channel values). */
export const DEFAULT_CHECKPOINTS_COLLECTION = COLLECTIONS.checkpoints;
/** Collection of pending writes, one document per write. */
export const DEFAULT_CHECKPOINT_WRITES_COLLECTION = COLLECTIONS.checkpointWrites;
/** Collection of channel values and list links, keyed by (thread, namespace, channel, version). */
export const DEFAULT_CHECKPOINT_BLOBS_COLLECTION = COLLECTIONS.checkpointBlobs;
/** Collection of per-thread fences (see {@link ThreadwiseSaver.claimThread}). */
export const DEFAULT_CHECKPOINT_THREADS_COLLECTION = COLLECTIONS.checkpointThreads;

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
  /**
   * What contents are sealed with, per the thread's conversation (docs/security.md, "Contents at
   * rest"). Default: stored clear, as the serializer writes them.
   */
  cipher?: ContentCipher;
  /** The digest key of a thread's tenant (see `CheckpointContents`). Required with an enabled `cipher`; default: none. */
  digestKeyOf?: (threadId: string) => Promise<Uint8Array>;
  /** Milliseconds an opened value is kept in memory (the cipher's data key age). Default: `DEFAULT_OPENED_VALUE_MAX_AGE_MS`. */
  openedValueMaxAgeMs?: number;
}

const optionsSchema = z.object({
  ttl: z.number().int().positive().optional(),
  expiresAfterMs: z.number().int().positive().optional(),
  maxDocumentBytes: z.number().int().positive().max(MONGODB_MAX_DOCUMENT_BYTES).optional(),
  checkpointsKept: z.number().int().positive().optional(),
});

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
 *
 * With an enabled `cipher`, every stored value that can hold content (metadata, inline values,
 * blobs, list items, pending writes) is sealed under the tenant of the thread's conversation (see
 * `CheckpointContents`); a clear value where a ciphertext is expected, or one moved from another
 * thread, is refused with `ContentRefusedError`, and a thread without a conversation with
 * `NotFoundError` on its first write (docs/security.md, "Contents at rest").
 */
export class ThreadwiseSaver extends MongoDBSaver {
  readonly checkpointBlobsCollectionName: string;
  readonly checkpointThreadsCollectionName: string;
  readonly maxDocumentBytes: number;
  readonly checkpointsKept: number;
  private readonly expiresAfterMs?: number;
  private readonly blobs: ChannelBlobStore;
  private readonly fences: ThreadFences;
  private readonly reader: CheckpointReader;
  private readonly planner: ChannelPlanner;
  private readonly pruner: CheckpointPruner;
  private readonly contents: CheckpointContents;
  private readonly seal: HeaderSeal;
  private readonly resealer: CheckpointResealer;

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
    const blobCollection = this.db.collection<BlobDocument>(this.checkpointBlobsCollectionName);
    this.contents = new CheckpointContents({ cipher: options.cipher, digestKeyOf: options.digestKeyOf, openedValueMaxAgeMs: options.openedValueMaxAgeMs });
    this.seal = { contents: this.contents, collection: this.checkpointCollectionName };
    this.blobs = new ChannelBlobStore(blobCollection, this.serde, { maxDocumentBytes: this.maxDocumentBytes, linkBytes }, this.contents);
    this.reader = new CheckpointReader(this.checkpoints, this.writes, this.fences, this.blobs, this.serde, this.seal);
    this.planner = new ChannelPlanner(this.checkpoints, this.blobs, this.serde, this.seal);
    this.resealer = new CheckpointResealer({
      checkpoints: this.checkpoints,
      writes: this.writes,
      blobs: blobCollection,
      contents: this.contents,
      serde: this.serde,
      searchable: (search) => this.searchable(search as CheckpointMetadata) as Record<string, unknown>,
      onRelinked: (position, channel, version) => this.blobs.forgetHead(position, channel, version),
    });
    this.pruner = new CheckpointPruner({
      seal: this.seal,
      checkpoints: this.checkpoints,
      writes: this.writes,
      blobCollection,
      blobs: this.blobs,
      fences: this.fences,
      serde: this.serde,
      checkpointsKept: this.checkpointsKept,
      linkBytes,
    });
  }

  /** False when contents are stored clear. */
  get encrypted(): boolean {
    return this.contents.enabled;
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
   * of at most the link size (see `CheckpointPruner.compactStoredLists`): nothing a checkpoint reads
   * changes, and every document is bounded again. Every thread, or only `threadId`; a thread whose
   * prune is running is skipped (its prune lease is taken, as prune takes it) and counted. A step of
   * database set-up (migration 002, `lib/store/migrations/`), run once per database; safe to run again.
   */
  async compactStoredLists(threadId?: string): Promise<StoredListCompaction> {
    return this.pruner.compactStoredLists(threadId);
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
    return this.reader.newest(query);
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
    // Encrypted: what is not kept clear in `metadata_search` is matched on the metadata as read back.
    const readBack: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(filter ?? {})) {
      if (value !== null && typeof value === "object") {
        throw new ValidationError(`list filter value of "${key}" must be a primitive`);
      }
      if (this.encrypted && !(CLEAR_METADATA_KEYS as readonly string[]).includes(key)) readBack[key] = value;
      else query[`metadata_search.${key}`] = value;
    }
    const beforeId = readConfigString("checkpoint_id", before?.configurable?.checkpoint_id);
    if (beforeId !== undefined) query.checkpoint_id = { $lt: beforeId };
    if (limit !== undefined && limit <= 0) return;
    yield* this.reader.list(query, limit, readBack);
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

    const read = this.reader.context();
    const [view, parentDoc] = await Promise.all([
      // Fail fast: a writer already fenced out writes nothing at all.
      epoch === undefined ? undefined : this.fences.assertHeld(thread_id, epoch),
      parent_checkpoint_id === undefined ? undefined : this.checkpoints.findOne({ ...position, checkpoint_id: parent_checkpoint_id }),
    ]);
    if (view !== undefined) read.seed(thread_id, view);
    const parent = parent_checkpoint_id === undefined ? undefined : await this.planner.parentOf(position, parent_checkpoint_id, parentDoc ?? null, read);
    const plan = await this.planner.plan(position, checkpoint_id, header.channel_versions, newVersions ?? header.channel_versions, values, parent, read);
    const blobs = await this.blobs.prepare(position, plan.writes, `checkpoint ${checkpoint_id}`);

    const [[type, serializedCheckpoint], [metadataType, serializedMetadata]] = await Promise.all([
      this.serde.dumpsTyped(header),
      this.serde.dumpsTyped(metadata),
    ]);
    if (type !== metadataType) throw new Error("Mismatched checkpoint and metadata types.");
    // The header's versions stay clear (its values are stored apart); its metadata may hold content.
    const metadataRef = checkpointRefs.header(this.checkpointCollectionName, position, checkpoint_id, "metadata");
    const storedMetadata = await this.contents.seal(thread_id, metadataRef, serializedMetadata);
    const carried = [...plan.keys].filter(([channel, key]) => key !== String(header.channel_versions[channel]));
    const checkpointDoc: CheckpointDocument = {
      thread_id,
      checkpoint_ns,
      checkpoint_id,
      parent_checkpoint_id,
      type: `${HEADER_TYPE_PREFIX}${type}`,
      checkpoint: new Binary(serializedCheckpoint),
      metadata: storedMetadata,
      metadata_search: this.searchable(metadata),
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
        const ref = checkpointRefs.write(this.checkpointWritesCollectionName, { thread_id, checkpoint_ns }, checkpoint_id, taskId, filter.idx);
        const fields = { channel, type, value: await this.contents.seal(thread_id, ref, serialized), task_path: taskPath ?? "" };
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
   * What of the metadata `list` filters on in the database: all of it with encryption off (as
   * stock does); with encryption on, only {@link CLEAR_METADATA_KEYS} (the rest is sealed with
   * the header, and may hold content: LangGraph copies the run's metadata into it).
   */
  private searchable(metadata: CheckpointMetadata): CheckpointMetadata {
    if (!this.encrypted) return metadata;
    const record = metadata as Record<string, unknown>;
    return Object.fromEntries(CLEAR_METADATA_KEYS.filter((key) => record[key] !== undefined).map((key) => [key, record[key]])) as CheckpointMetadata;
  }

  /**
   * Seals again every stored value `needsReseal` selects (clear ones included): checkpoint
   * headers and metadata, inline values, blobs, list items and pending writes' values, each under
   * its thread's current tenant key and bound to where it is stored; with encryption on, list
   * digests and value digests stored as plain SHA-256 are made again under the tenant's digest
   * key, and `metadata_search` keeps only {@link CLEAR_METADATA_KEYS}. What set-up runs (with
   * `(stored) => !isCiphertext(stored)`) the first time encryption is on, and what a key rotation
   * re-encrypts with. Every thread, or only `threadId`; a thread without a conversation is left
   * as it is and counted (`orphaned`). Idempotent; each document is replaced only if unchanged
   * since it was read, and a reader meanwhile reads the old or the new document, both whole.
   * Does nothing with encryption off.
   */
  async resealStoredCheckpoints(needsReseal: NeedsReseal, options: { threadId?: string } = {}): Promise<CheckpointReseal> {
    return this.resealer.reseal(needsReseal, options);
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
    return this.pruner.prune(threadId, options);
  }
}
