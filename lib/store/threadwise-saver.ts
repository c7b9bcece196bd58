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
import { Binary, type AnyBulkWriteOperation, type Collection, type Document, type Filter, type MongoClient } from "mongodb";
import { z } from "zod";
import { ValidationError } from "../errors.js";
import { ThreadFences, isVisible, readFenceEpoch, type FenceStamp, type FenceView, type ThreadFenceDocument } from "./checkpoint/thread-fences.js";
import { ChannelBlobStore, type BlobDocument, type BlobPosition } from "./checkpoint/channel-blob-store.js";
import { DEFAULT_MAX_DOCUMENT_BYTES, MONGODB_MAX_DOCUMENT_BYTES, assertDocumentFits } from "./checkpoint/document-size.js";
import { COLLECTIONS } from "./collections.js";
import { parseOrThrow } from "../validation.js";

/** Collection of checkpoint headers (everything but channel values). */
export const DEFAULT_CHECKPOINTS_COLLECTION = COLLECTIONS.checkpoints;
/** Collection of pending writes, one document per write. */
export const DEFAULT_CHECKPOINT_WRITES_COLLECTION = COLLECTIONS.checkpointWrites;
/** Collection of channel values and list chunks, keyed by (thread, namespace, channel, version). */
export const DEFAULT_CHECKPOINT_BLOBS_COLLECTION = COLLECTIONS.checkpointBlobs;
/** Collection of per-thread fences (see {@link ThreadwiseSaver.claimThread}). */
export const DEFAULT_CHECKPOINT_THREADS_COLLECTION = COLLECTIONS.checkpointThreads;
/**
 * Checkpoints of each namespace that {@link ThreadwiseSaver.prune} keeps. Resuming needs only
 * the latest; a few more leave the end of the last turn inspectable.
 */
export const DEFAULT_CHECKPOINTS_KEPT = 3;

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
  /** Largest document written, in BSON bytes. Default: {@link DEFAULT_MAX_DOCUMENT_BYTES}. */
  maxDocumentBytes?: number;
  /** Checkpoints per namespace kept by `prune()` when no `keep` is given. Default: {@link DEFAULT_CHECKPOINTS_KEPT}. */
  checkpointsKept?: number;
}

export interface PruneOptions {
  /** Latest checkpoints kept per namespace. Default: the saver's `checkpointsKept`. */
  keep?: number;
}

/** Documents removed by one {@link ThreadwiseSaver.prune} call. */
export interface PruneResult {
  checkpoints: number;
  writes: number;
  blobs: number;
}

const optionsSchema = z.object({
  ttl: z.number().int().positive().optional(),
  maxDocumentBytes: z.number().int().positive().max(MONGODB_MAX_DOCUMENT_BYTES).optional(),
  checkpointsKept: z.number().int().positive().optional(),
});

const keepSchema = z.number().int().positive();

interface CheckpointDocument extends FenceStamp {
  thread_id: string;
  checkpoint_ns: string;
  checkpoint_id: string;
  parent_checkpoint_id?: string;
  type: string;
  checkpoint: Binary;
  metadata: Binary;
  metadata_search: CheckpointMetadata;
}

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
 * A `MongoDBSaver` whose storage stays linear in the length of a thread.
 *
 * Stock `MongoDBSaver` serializes every channel value into every checkpoint, so the growing
 * message list is copied once per step and a thread's storage grows quadratically. This saver
 * stores each channel value once per version in `checkpoint_blobs`, keyed by (thread, namespace,
 * channel, version), writes only the versions `put` is told are new (as the Postgres and SQLite
 * savers do) and reassembles `channel_values` from the checkpoint's `channel_versions` on read.
 * A long list value (the message list) is stored as content-addressed chunks, so a new version
 * writes only its changed last chunk and the list of chunk hashes (see {@link ChannelBlobStore}).
 * {@link prune} then removes superseded checkpoints, their writes, and the blob versions and
 * chunks no kept checkpoint references.
 *
 * Every document is measured before it is written and refused with `DocumentTooLargeError`
 * above `maxDocumentBytes`. Channel versions are LangGraph's default integers, so a blob version
 * is rewritten when a retry recomputes it; forking a thread from an older checkpoint would reuse
 * versions and is not supported (Threadwise keeps each thread's chain linear).
 */
export class ThreadwiseSaver extends MongoDBSaver {
  readonly checkpointBlobsCollectionName: string;
  readonly checkpointThreadsCollectionName: string;
  readonly maxDocumentBytes: number;
  readonly checkpointsKept: number;
  private readonly blobs: ChannelBlobStore;
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
    this.maxDocumentBytes = checked.maxDocumentBytes ?? DEFAULT_MAX_DOCUMENT_BYTES;
    this.checkpointsKept = checked.checkpointsKept ?? DEFAULT_CHECKPOINTS_KEPT;
    this.checkpointThreadsCollectionName = options.checkpointThreadsCollectionName ?? DEFAULT_CHECKPOINT_THREADS_COLLECTION;
    this.fences = new ThreadFences(this.db.collection<ThreadFenceDocument>(this.checkpointThreadsCollectionName), () => this.stamp());
    this.blobs = new ChannelBlobStore(this.db.collection<BlobDocument>(this.checkpointBlobsCollectionName), this.serde, {
      maxDocumentBytes: this.maxDocumentBytes,
      timestamps: this.enableTimestamps,
    });
  }

  private get checkpoints(): Collection<CheckpointDocument> {
    return this.db.collection<CheckpointDocument>(this.checkpointCollectionName);
  }

  private get writes(): Collection<WriteDocument> {
    return this.db.collection<WriteDocument>(this.checkpointWritesCollectionName);
  }

  /**
   * `upserted_at`, which the TTL indexes expire on, when a ttl is set. Set from the client clock
   * rather than with `$currentDate`, which the embedded server used locally does not support.
   */
  private stamp(): { upserted_at?: Date } {
    return this.enableTimestamps ? { upserted_at: new Date() } : {};
  }

  /**
   * Creates the indexes of the three collections, and the `upserted_at` TTL indexes when a ttl is
   * set. Idempotent; returns the errors (empty when every index exists) for the caller to check.
   */
  override async setup(): Promise<Error[]> {
    const fenceIndexes = this.ttl != null ? [this.fences.collection.createIndex({ upserted_at: 1 }, { expireAfterSeconds: this.ttl })] : [];
    const [baseErrors, results] = await Promise.all([
      super.setup(),
      Promise.allSettled([...this.blobs.createIndexes(this.ttl), ...fenceIndexes]),
    ]);
    const errors = results.filter((r) => r.status === "rejected").map((r) => r.reason as Error);
    return [...baseErrors, ...errors];
  }

  /**
   * Raises the thread's fence to `epoch`, creating its record if absent. From then on a `put` or
   * `putWrites` whose `configurable.fence_epoch` is below `epoch` is refused with
   * StaleWriterError, and nothing it wrote becomes visible. Claiming the current epoch again is
   * allowed. An epoch belongs to one writer, and a thread's epochs only grow.
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
    const query: Filter<CheckpointDocument> = checkpoint_id
      ? { thread_id, checkpoint_ns, checkpoint_id }
      : { thread_id, checkpoint_ns };
    const fences = new FenceCache(this.fences);
    for await (const doc of this.checkpoints.find(query).sort({ checkpoint_id: -1 })) {
      if (await fences.visible(doc)) return this.loadTuple(doc, fences);
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
    const fences = new FenceCache(this.fences);
    let yielded = 0;
    for await (const doc of this.checkpoints.find(query).sort({ checkpoint_id: -1 })) {
      if (!(await fences.visible(doc))) continue;
      yield await this.loadTuple(doc, fences);
      yielded += 1;
      if (limit !== undefined && yielded >= limit) return;
    }
  }

  /**
   * Stores the checkpoint header and, as blobs, the channel values whose versions are in
   * `newVersions` (all of them when it is omitted). Every document is size-checked before the
   * first write; blobs are written before the header, so a header never points at missing blobs.
   * With `configurable.fence_epoch`, the header becomes visible only if the fence still allows
   * the epoch when it is committed (see {@link claimThread}).
   */
  override async put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    newVersions?: ChannelVersions,
  ): Promise<RunnableConfig> {
    const thread_id = readConfigString("thread_id", config.configurable?.thread_id, true) as string;
    const checkpoint_ns = readConfigString("checkpoint_ns", config.configurable?.checkpoint_ns) ?? "";
    const parent_checkpoint_id = readConfigString("checkpoint_id", config.configurable?.checkpoint_id);
    const epoch = readFenceEpoch(config.configurable?.fence_epoch);
    const checkpoint_id = checkpoint.id;
    const header = copyCheckpoint(checkpoint);
    const values: Record<string, unknown> = header.channel_values;
    header.channel_values = {};

    const [[checkpointType, serializedCheckpoint], [metadataType, serializedMetadata]] = await Promise.all([
      this.serde.dumpsTyped(header),
      this.serde.dumpsTyped(metadata),
    ]);
    if (checkpointType !== metadataType) throw new Error("Mismatched checkpoint and metadata types.");
    const checkpointDoc: CheckpointDocument = {
      thread_id,
      checkpoint_ns,
      checkpoint_id,
      parent_checkpoint_id,
      type: checkpointType,
      checkpoint: new Binary(serializedCheckpoint),
      metadata: new Binary(serializedMetadata),
      metadata_search: metadata,
    };
    assertDocumentFits(checkpointDoc, this.maxDocumentBytes, `checkpoint ${checkpoint_id}`);

    const position = { thread_id, checkpoint_ns };
    if (epoch !== undefined) await this.fences.assertHeld(thread_id, epoch);
    const blobs = await this.blobs.prepare(position, values, newVersions ?? header.channel_versions, `checkpoint ${checkpoint_id}`);
    await this.blobs.write(blobs);
    if (this.enableTimestamps) await this.blobs.touch(position);
    const key = { thread_id, checkpoint_ns, checkpoint_id };
    const writeHeader = (stamp: FenceStamp) =>
      this.checkpoints.updateOne(key, { $set: { ...checkpointDoc, ...stamp, ...this.stamp() } }, { upsert: true });
    if (epoch === undefined) await writeHeader({});
    else await this.fences.write(thread_id, epoch, (token) => writeHeader({ epoch, token }), (token) => this.checkpoints.deleteOne({ ...key, epoch, token }));
    return { configurable: { thread_id, checkpoint_ns, checkpoint_id } };
  }

  /**
   * Stores intermediate writes as stock does, plus the task path that orders them on read, each
   * document size-checked before any is written. With `configurable.fence_epoch`, the writes
   * become visible only if the fence still allows the epoch when they are committed.
   */
  override async putWrites(
    config: RunnableConfig,
    writes: PendingWrite[],
    taskId: string,
    taskPath?: string,
  ): Promise<void> {
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
      await this.fences.write(thread_id, epoch, (token) => writeAll({ token }), (token) => this.writes.deleteMany({ ...taskWrites, token }));
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
   * Keeps the latest `keep` checkpoints of each namespace of the thread and removes older
   * checkpoints, their writes, the blob versions that no kept checkpoint references and that a
   * kept checkpoint has superseded, and the chunks no remaining version lists. Call it between
   * turns, never while a turn of the same thread runs (the conversation lease ensures this): the
   * chunks of a checkpoint being written are listed by no version until its put completes.
   */
  async prune(threadId: string, options: PruneOptions = {}): Promise<PruneResult> {
    if (typeof threadId !== "string") throw new ValidationError("threadId must be a string");
    const keep = parseOptions(keepSchema, options.keep ?? this.checkpointsKept, "keep");
    const docs = await this.checkpoints
      .find({ thread_id: threadId })
      .sort({ checkpoint_ns: 1, checkpoint_id: -1 })
      .toArray();
    const byNamespace = new Map<string, CheckpointDocument[]>();
    for (const doc of docs) {
      const list = byNamespace.get(doc.checkpoint_ns) ?? [];
      list.push(doc);
      byNamespace.set(doc.checkpoint_ns, list);
    }
    const result: PruneResult = { checkpoints: 0, writes: 0, blobs: 0 };
    for (const [checkpoint_ns, namespaceDocs] of byNamespace) {
      const kept = namespaceDocs.slice(0, keep);
      const oldestKept = kept[kept.length - 1].checkpoint_id;
      const position = { thread_id: threadId, checkpoint_ns };
      const [removedCheckpoints, removedWrites] = await Promise.all([
        this.checkpoints.deleteMany({ ...position, checkpoint_id: { $lt: oldestKept } }),
        this.writes.deleteMany({ ...position, checkpoint_id: { $lt: oldestKept } }),
      ]);
      result.checkpoints += removedCheckpoints.deletedCount;
      result.writes += removedWrites.deletedCount;
      const keptVersions = await Promise.all(
        kept.map(async (doc) => ((await this.serde.loadsTyped(doc.type, doc.checkpoint.buffer)) as Checkpoint).channel_versions),
      );
      result.blobs += await this.blobs.prune(position, keptVersions);
    }
    return result;
  }

  private async loadTuple(doc: CheckpointDocument, fences: FenceCache): Promise<CheckpointTuple> {
    const { thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id } = doc;
    const position = { thread_id, checkpoint_ns };
    const [checkpoint, metadata, pendingWrites] = await Promise.all([
      this.serde.loadsTyped(doc.type, doc.checkpoint.buffer) as Promise<Checkpoint>,
      this.serde.loadsTyped(doc.type, doc.metadata.buffer) as Promise<CheckpointMetadata>,
      this.loadWrites(position, checkpoint_id, fences),
    ]);
    checkpoint.channel_values = await this.blobs.read(position, checkpoint.channel_versions);
    if (checkpoint.v < 4 && parent_checkpoint_id != null) {
      await this.migratePendingSends(checkpoint, position, parent_checkpoint_id, fences);
    }
    return {
      config: { configurable: { thread_id, checkpoint_ns, checkpoint_id } },
      checkpoint,
      metadata,
      pendingWrites: pendingWrites.map(({ taskId, channel, value }) => [taskId, channel, value] as CheckpointPendingWrite),
      parentConfig:
        parent_checkpoint_id != null
          ? { configurable: { thread_id, checkpoint_ns, checkpoint_id: parent_checkpoint_id } }
          : undefined,
    };
  }

  /**
   * The checkpoint's visible writes in `writesSortKey` order, the order live execution applies
   * them in. Where writers of several epochs wrote the same task's write, the latest epoch's counts.
   */
  private async loadWrites(
    position: BlobPosition,
    checkpoint_id: string,
    fences: FenceCache,
    channel?: string,
  ): Promise<{ taskId: string; channel: string; value: unknown }[]> {
    const found = await this.writes
      .find(channel === undefined ? { ...position, checkpoint_id } : { ...position, checkpoint_id, channel })
      .toArray();
    const latest = new Map<string, WriteDocument>();
    for (const doc of found) {
      if (!(await fences.visible(doc))) continue;
      const key = JSON.stringify([doc.task_id, doc.idx]);
      const other = latest.get(key);
      if (other === undefined || (other.epoch ?? -1) < (doc.epoch ?? -1)) latest.set(key, doc);
    }
    const docs = [...latest.values()];
    docs.sort((a, b) =>
      compareWritesSortKeys(writesSortKey(a.task_path ?? "", a.task_id, a.idx), writesSortKey(b.task_path ?? "", b.task_id, b.idx)),
    );
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
  private async migratePendingSends(checkpoint: Checkpoint, position: BlobPosition, parentId: string, fences: FenceCache): Promise<void> {
    const sends = await this.loadWrites(position, parentId, fences, TASKS);
    const existing = Object.values(checkpoint.channel_versions);
    checkpoint.channel_values[TASKS] = sends.map((w) => w.value);
    // Read deterministically: the same checkpoint reads back the same versions every time.
    checkpoint.channel_versions[TASKS] = existing.length > 0 ? maxChannelVersion(...existing) : 1;
  }
}

/** The fences of the threads one read touches, each read once. */
class FenceCache {
  private readonly views = new Map<string, Promise<FenceView>>();

  constructor(private readonly fences: ThreadFences) {}

  /** Whether readers see the document (unfenced or committed; see `isVisible`). */
  async visible(doc: FenceStamp & { thread_id: string }): Promise<boolean> {
    if (doc.token === undefined || doc.token === null) return true;
    let view = this.views.get(doc.thread_id);
    if (view === undefined) this.views.set(doc.thread_id, (view = this.fences.view(doc.thread_id)));
    return isVisible(doc, await view);
  }
}
