import {
  TASKS,
  compareWritesSortKeys,
  maxChannelVersion,
  writesSortKey,
  type Checkpoint,
  type CheckpointPendingWrite,
  type CheckpointTuple,
  type SerializerProtocol,
} from "@langchain/langgraph-checkpoint";
import type { Binary, Collection, Document, Filter } from "mongodb";
import { ChannelValueMissingError } from "../../errors.js";
import type { BlobPosition, BlobReader } from "./blob-reader.js";
import type { ChannelBlobStore } from "./channel-blob-store.js";
import { checkpointRefs } from "./checkpoint-contents.js";
import { CLEAR_HEADERS, HEADER_FORMAT, decodeHeader, type CheckpointDocument, type DecodedHeader, type HeaderSeal } from "./checkpoint-header.js";
import { type FenceStamp, type FenceView, type ThreadFences, isVisible } from "./thread-fences.js";

/** One document of `checkpoint_writes`: a pending write of a task, as stock stores it, plus the task path that orders it. */
export interface WriteDocument extends FenceStamp {
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

/**
 * The read side of the checkpointer: finds the newest visible checkpoint or lists them, and
 * assembles a tuple from its header, its channel values (blobs, list links, inline values) and
 * its visible pending writes. Visibility under fences is decided per read call by a
 * {@link ReadContext}.
 */
export class CheckpointReader {
  constructor(
    private readonly checkpoints: Collection<CheckpointDocument>,
    private readonly writes: Collection<WriteDocument>,
    private readonly fences: ThreadFences,
    private readonly blobs: ChannelBlobStore,
    private readonly serde: SerializerProtocol,
    /** How headers (and, with the same contents, writes) are sealed. Default: clear. */
    private readonly seal: HeaderSeal = CLEAR_HEADERS,
  ) {}

  /** What one read call shares (see {@link ReadContext}); `forWriting` as `ChannelBlobStore.reader`. */
  context(forWriting = false): ReadContext {
    return new ReadContext(this.fences, this.blobs.reader(forWriting));
  }

  /** The newest checkpoint matching `query` that readers see, as a tuple. */
  async newest(query: Filter<CheckpointDocument>): Promise<CheckpointTuple | undefined> {
    const read = this.context(true);
    const [newest] = await this.checkpoints.find(query).sort({ checkpoint_id: -1 }).limit(1).toArray();
    if (newest === undefined) return undefined;
    if (await read.visible(newest)) return this.loadTuple(newest, read);
    // A fenced write that was refused, or is not committed yet: the newest visible one is older.
    for await (const doc of this.checkpoints.find({ ...query, checkpoint_id: { $lt: newest.checkpoint_id } }).sort({ checkpoint_id: -1 })) {
      if (await read.visible(doc)) return this.loadTuple(doc, read);
    }
    return undefined;
  }

  /**
   * The visible checkpoints matching `query`, newest first, at most `limit`; with `metadata`, only
   * those whose metadata, read back, has each of its values (a filter on what is not stored clear).
   */
  async *list(query: Filter<Document>, limit: number | undefined, metadata: Record<string, unknown> = {}): AsyncGenerator<CheckpointTuple> {
    const read = this.context();
    let yielded = 0;
    const wanted = Object.entries(metadata);
    for await (const doc of this.checkpoints.find(query).sort({ checkpoint_id: -1 })) {
      if (!(await read.visible(doc as CheckpointDocument))) continue;
      const tuple = await this.loadTuple(doc as CheckpointDocument, read);
      if (!wanted.every(([key, value]) => (tuple.metadata as Record<string, unknown> | undefined)?.[key] === value)) continue;
      yield tuple;
      yielded += 1;
      if (limit !== undefined && yielded >= limit) return;
    }
  }

  private async loadTuple(doc: CheckpointDocument, read: ReadContext): Promise<CheckpointTuple> {
    const { thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id } = doc;
    const position = { thread_id, checkpoint_ns };
    const [header, pendingWrites] = await Promise.all([decodeHeader(doc, this.serde, this.seal), this.loadWrites(position, checkpoint_id, read)]);
    const checkpoint = header.checkpoint;
    checkpoint.channel_values = await this.loadValues(position, header, read.blobs);
    // Kept: LangGraph's checkpoint format before v4, which a caller may still put; its conformance suite checks this read.
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
    // Kept: stock `MongoDBSaver` headers carry their values; earlier releases' headers have its form, so no migration can tell the two apart.
    if (header.format !== HEADER_FORMAT && Object.keys(stockValues).length > 0) return stockValues;
    const keys = header.keys;
    const { values, missing } = await blobs.read(position, keys);
    for (const [channel, { type, blob }] of header.inline) {
      const ref = checkpointRefs.inline(this.seal.collection, position, channel, String(header.checkpoint.channel_versions[channel]));
      values[channel] = await this.serde.loadsTyped(type, await this.seal.contents.open(position.thread_id, ref, blob));
    }
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
        value: await this.serde.loadsTyped(
          doc.type,
          await this.seal.contents.open(
            doc.thread_id,
            checkpointRefs.write(this.writes.collectionName, position, doc.checkpoint_id, doc.task_id, doc.idx),
            doc.value,
          ),
        ),
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

/** What one read call shares: the fences of the threads it touches (each read once) and a blob reader. */
export class ReadContext {
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
