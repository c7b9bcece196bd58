import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { MongoBulkWriteError, MongoServerError, type AnyBulkWriteOperation, type Collection } from "mongodb";
import { ChannelVersionConflictError } from "../../errors.js";
import { ByteBoundedMap } from "../../byte-bounded-map.js";
import { type BlobDocument, type BlobPosition, BlobReader, LIST_TYPE, pairKey } from "./blob-reader.js";
import { BlobPruner } from "./blob-pruner.js";
import { CheckpointContents, checkpointRefs, type Digests } from "./checkpoint-contents.js";
import { assertDocumentFits } from "./document-size.js";
import { ItemCodec } from "./item-codec.js";
import { planLinks, type ListHead, type SerializedItem } from "./list-links.js";

export { BlobReader, type BlobDocument, type BlobPosition } from "./blob-reader.js";
export type { ListCompaction } from "./blob-pruner.js";

/**
 * Serialized bytes of list items per stored link, and the most prune merges into one link. A new
 * version of the message list stores only the messages a step appended, usually far less; a list
 * stored whole is split into links of this size. One item larger than this gets a link of its own,
 * as large as the item (up to the saver's `maxDocumentBytes`, 4 MB by default): the only document
 * of a thread that can be larger than this plus a few KB of the link's own fields.
 */
export const DEFAULT_LIST_LINK_BYTES = 128 * 1024;

const DUPLICATE_KEY = 11000;

/** A channel value to store under `key`: a list (which may extend the stored version `base`), or a serialized value. */
export type ChannelWrite = { channel: string; key: string; list: unknown[]; base?: ListHead } | { channel: string; key: string; serialized: SerializedItem };

/** Channel values serialized and size-checked, ready to be written. */
export interface PreparedBlobs {
  position: BlobPosition;
  documents: BlobDocument[];
}

const headKey = (position: BlobPosition, channel: string, key: string) => JSON.stringify([position.thread_id, position.checkpoint_ns, channel, key]);
/** Bytes of list heads a store remembers (least recently used forgotten first): about a thousand heads of 32-key chains. */
export const DEFAULT_REMEMBERED_HEAD_BYTES = 2 * 1024 * 1024;
/** A remembered head's bytes: its strings as UTF-16, and a few numbers and references. */
const headBytes = (key: string, head: ListHead) =>
  2 * (key.length + head.key.length + head.digest.length + (head.chain ?? []).reduce((n, k) => n + k.length, 0)) + 96;

/**
 * The `checkpoint_blobs` collection: each channel value once per version. A list value (the
 * message list) is stored as links: a version that extends the version its parent checkpoint
 * referenced stores only the appended items and names that version as its `base`, so the list
 * is stored once however many versions of it are kept.
 *
 * Invariant: a link is written before any checkpoint header references it, and prune removes a
 * version only when no kept checkpoint reaches it (directly or as a base) and it is older than
 * the newest kept version of its channel, or was left by a stale writer; so every version a
 * visible checkpoint references can be read back whole, or reading fails loudly.
 */
export class ChannelBlobStore {
  private readonly heads = new ByteBoundedMap<string, ListHead>(DEFAULT_REMEMBERED_HEAD_BYTES, headBytes);
  private readonly codec: ItemCodec;

  /**
   * @param contents Where values and list items are sealed and opened (see `CheckpointContents`).
   *   Default: stored clear.
   */
  constructor(
    private readonly collection: Collection<BlobDocument>,
    private readonly serde: SerializerProtocol,
    private readonly options: { maxDocumentBytes: number; linkBytes: number },
    readonly contents: CheckpointContents = new CheckpointContents(),
  ) {
    this.codec = new ItemCodec(serde);
  }

  /** Index creations for `setup()`: the unique key, and the TTL index when `ttl` is set. */
  createIndexes(ttl?: number): Promise<string>[] {
    const operations = [
      this.collection.createIndex({ thread_id: 1, checkpoint_ns: 1, channel: 1, version: 1 }, { name: "thread_ns_channel_version_idx", unique: true }),
    ];
    if (ttl != null) operations.push(this.collection.createIndex({ upserted_at: 1 }, { expireAfterSeconds: ttl }));
    return operations;
  }

  /**
   * Serializes and seals the values, and checks every document, as it will be stored, against the
   * size limit (a ciphertext is a few hundred bytes longer than its value).
   * @throws DocumentTooLargeError before anything is written.
   * @throws NotFoundError when encryption is on and the thread belongs to no conversation.
   */
  async prepare(position: BlobPosition, writes: ChannelWrite[], what: string): Promise<PreparedBlobs> {
    const digests = await this.contents.digests(position.thread_id);
    const perChannel = await Promise.all(writes.map((write) => this.documentsFor(position, write, what, digests)));
    return { position, documents: perChannel.flat() };
  }

  private async documentsFor(position: BlobPosition, write: ChannelWrite, what: string, digests: Digests): Promise<BlobDocument[]> {
    const { channel, key } = write;
    const name = this.collection.collectionName;
    const checked = (doc: BlobDocument) => {
      assertDocumentFits(doc, this.options.maxDocumentBytes, `channel "${channel}" of ${what}`);
      return doc;
    };
    if ("serialized" in write) {
      const { type, bytes } = write.serialized;
      const blob = await this.contents.seal(position.thread_id, checkpointRefs.blob(name, position, channel, key), bytes);
      return [checked({ ...position, channel, version: key, type, blob, content: digests.value(write.serialized) })];
    }
    const items = await Promise.all(write.list.map((item) => this.codec.serialize(item)));
    const links = planLinks(key, items, this.codec.digests(write.list, items, digests), write.base, this.options.linkBytes);
    return Promise.all(
      links.map(async (link) => {
        const first = link.count - link.items.length;
        const stored = await Promise.all(
          link.items.map((item, i) => this.contents.seal(position.thread_id, checkpointRefs.item(name, position, channel, first + i), item.bytes)),
        );
        return checked({
          ...position,
          channel,
          version: link.key,
          type: LIST_TYPE,
          blob: null,
          // The list up to this link, whatever links it is split into (prune may merge them).
          content: `${link.digest}:${link.count}`,
          ...(link.base === undefined ? {} : { base: link.base }),
          count: link.count,
          digest: link.digest,
          chain: link.chain,
          items: stored,
          item_types: link.items.map((item) => item.type),
          bytes: stored.reduce((sum, item) => sum + item.position, 0),
        });
      }),
    );
  }

  /**
   * Writes prepared documents, bases before the links on them; a key already stored with the
   * same value is left as it is.
   * @throws ChannelVersionConflictError when a key is stored with another value (the documents
   *   before it in the batch may be written; no checkpoint references them).
   */
  async write(prepared: PreparedBlobs, stamp: { epoch?: number; upserted_at?: Date; expiresAt?: Date }): Promise<void> {
    if (prepared.documents.length === 0) return;
    const operations: AnyBulkWriteOperation<BlobDocument>[] = prepared.documents.map((doc) => ({
      updateOne: {
        filter: { thread_id: doc.thread_id, checkpoint_ns: doc.checkpoint_ns, channel: doc.channel, version: doc.version, content: doc.content },
        update: { $setOnInsert: { ...doc, ...stamp } },
        upsert: true,
      },
    }));
    try {
      await this.collection.bulkWrite(operations, { ordered: true });
      for (const doc of prepared.documents) if (doc.type === LIST_TYPE) this.rememberHead(prepared.position, doc);
    } catch (error) {
      const first = error instanceof MongoBulkWriteError ? [error.writeErrors].flat()[0] : undefined;
      const code = first?.code ?? (error instanceof MongoServerError ? error.code : undefined);
      if (code === DUPLICATE_KEY) throw conflict(prepared.position, prepared.documents[first?.index ?? 0], error);
      throw error;
    }
  }

  /**
   * Refreshes `upserted_at` of the blobs of the position last refreshed before `olderThan`, so
   * that values an active thread still references, however long ago they were written, do not
   * expire under the TTL index. Each blob is rewritten once per interval, not once per put.
   */
  async touch(position: BlobPosition, olderThan: Date): Promise<void> {
    await this.collection.updateMany({ ...position, upserted_at: { $lt: olderThan } }, { $set: { upserted_at: new Date() } });
  }

  /**
   * The newest links of the list versions among `keys` (channel → key), by channel. Links are
   * never changed in what they stand for, so those this store wrote or read recently are
   * remembered: the next step's put usually extends the version the previous one wrote.
   */
  async listHeads(position: BlobPosition, keys: Map<string, string>): Promise<Map<string, ListHead>> {
    const heads = new Map<string, ListHead>();
    const unknown = new Map<string, string>();
    for (const [channel, key] of keys) {
      const known = this.heads.get(headKey(position, channel, key));
      if (known === undefined) unknown.set(channel, key);
      else heads.set(channel, known);
    }
    if (unknown.size === 0) return heads;
    const docs = await this.collection
      .find(
        { ...position, type: LIST_TYPE, $or: [...unknown].map(([channel, version]) => ({ channel, version })) },
        { projection: { channel: 1, version: 1, count: 1, digest: 1, chain: 1 } },
      )
      .toArray();
    for (const doc of docs) heads.set(doc.channel, this.rememberHead(position, doc));
    return heads;
  }

  private rememberHead(position: BlobPosition, doc: BlobDocument): ListHead {
    const head: ListHead = { key: doc.version, count: doc.count ?? 0, digest: doc.digest ?? "", ...(doc.chain === undefined ? {} : { chain: doc.chain }) };
    this.heads.set(headKey(position, doc.channel, doc.version), head);
    return head;
  }

  /** Forgets the remembered head of a list version rewritten elsewhere (its digest may have changed). */
  forgetHead(position: BlobPosition, channel: string, version: string): void {
    this.heads.delete(headKey(position, channel, version));
  }

  /** Which of the (channel, key) pairs are stored. */
  async stored(position: BlobPosition, keys: [string, string][]): Promise<Set<string>> {
    if (keys.length === 0) return new Set();
    const docs = await this.collection
      .find({ ...position, $or: keys.map(([channel, version]) => ({ channel, version })) }, { projection: { channel: 1, version: 1 } })
      .toArray();
    return new Set(docs.map((d) => pairKey(d.channel, d.version)));
  }

  /**
   * A reader for one call: the links of each list channel are fetched once, however many
   * checkpoints it reads. With `forWriting`, the digests of the lists it reads are remembered
   * too (see {@link ItemCodec.digests}), so that the next put of the thread hashes only what it appends.
   */
  reader(forWriting = false): BlobReader {
    return new BlobReader(this.collection, this.serde, this.codec, forWriting, this.contents);
  }

  /**
   * The pruner of this collection (see {@link BlobPruner}): a list version it rewrites is
   * forgotten from the heads this store remembers.
   */
  pruner(): BlobPruner {
    return new BlobPruner(
      this.collection,
      this.serde,
      this.options,
      () => this.reader(),
      (position, channel, version) => this.heads.delete(headKey(position, channel, version)),
    );
  }

  /** Deletes every blob of the position. */
  async deleteNamespace(position: BlobPosition): Promise<number> {
    return (await this.collection.deleteMany(position)).deletedCount;
  }

  /** Deletes every blob of the thread, in every namespace. */
  async deleteThread(threadId: string): Promise<void> {
    await this.collection.deleteMany({ thread_id: threadId });
  }
}

function conflict(position: BlobPosition, doc: BlobDocument | undefined, cause?: unknown): ChannelVersionConflictError {
  const channel = doc?.channel ?? "?";
  const version = doc?.version ?? "?";
  return new ChannelVersionConflictError(
    `channel "${channel}" version ${version} of thread ${position.thread_id} is already stored with another value`,
    position.thread_id,
    channel,
    version,
    cause === undefined ? undefined : { cause },
  );
}
