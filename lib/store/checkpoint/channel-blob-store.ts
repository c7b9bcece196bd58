import { createHash } from "node:crypto";
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { Binary, MongoBulkWriteError, MongoServerError, type AnyBulkWriteOperation, type Collection, type Filter } from "mongodb";
import { ChannelValueMissingError, ChannelVersionConflictError } from "../../errors.js";
import { compareVersionKeys } from "./channel-versions.js";
import { assertDocumentFits } from "./document-size.js";
import { planLinks, prefixDigests, serializeItems, type ListHead } from "./list-links.js";

/**
 * Serialized bytes of list items per stored link. A new version of the message list stores only
 * the messages a step appended, usually far less; a list stored whole is split into links of
 * this size, and one larger item gets a link of its own.
 */
export const DEFAULT_LIST_LINK_BYTES = 1024 * 1024;

/** Marks a channel that was cleared at this version; it has no value to restore. */
const EMPTY_TYPE = "empty";
/** A version of a list channel (or a link of one): items appended to its `base`. */
const LIST_TYPE = "list";
/** A list version stored by releases before list links, as `chunks` of content-addressed chunk documents. */
const CHUNKED_TYPE = "chunked";
const DUPLICATE_KEY = 11000;

/** Where a thread's channel values live: one thread, one checkpoint namespace. */
export interface BlobPosition {
  thread_id: string;
  checkpoint_ns: string;
}

/**
 * One document of `checkpoint_blobs`, keyed by (thread, namespace, channel, version key): a
 * channel value, a cleared channel, or a link of a list version. Written once: a second write of
 * a key must carry the same `content`.
 */
export interface BlobDocument extends BlobPosition {
  channel: string;
  version: string;
  type: string;
  blob: Binary | null;
  /** Identifies the value: equal for equal values. Absent on documents of earlier releases. */
  content?: string;
  /** A list link: the link it appends to, the list's length and digest up to it, its items. */
  base?: string;
  count?: number;
  digest?: string;
  items?: Binary[];
  item_types?: string[];
  /** Earlier releases' chunked list versions and chunks. */
  chunks?: string[];
  chunk?: true;
  /** The fenced writer's epoch, so that prune can drop what a stale writer left. */
  epoch?: number;
  upserted_at?: Date;
  expiresAt?: Date;
}

/** A channel value to store under `key`. A list may extend the stored version `base`. */
export interface ChannelWrite {
  channel: string;
  key: string;
  present: boolean;
  value?: unknown;
  base?: ListHead;
}

/** Channel values serialized and size-checked, ready to be written. */
export interface PreparedBlobs {
  position: BlobPosition;
  documents: BlobDocument[];
}

const pairKey = (channel: string, key: string) => `${channel}\u0000${key}`;
const chunkVersion = (hash: string) => `chunk:${hash}`;
const sha256 = (...parts: (string | Uint8Array)[]) => parts.reduce((h, p) => h.update(p), createHash("sha256")).digest("hex");

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
  constructor(
    private readonly collection: Collection<BlobDocument>,
    private readonly serde: SerializerProtocol,
    private readonly options: { maxDocumentBytes: number; linkBytes: number },
  ) {}

  /** Index creations for `setup()`: the unique key, and the TTL index when `ttl` is set. */
  createIndexes(ttl?: number): Promise<string>[] {
    const operations = [
      this.collection.createIndex(
        { thread_id: 1, checkpoint_ns: 1, channel: 1, version: 1 },
        { name: "thread_ns_channel_version_idx", unique: true },
      ),
    ];
    if (ttl != null) operations.push(this.collection.createIndex({ upserted_at: 1 }, { expireAfterSeconds: ttl }));
    return operations;
  }

  /**
   * Serializes the values and checks every document against the size limit. Versions already
   * stored with the same value are left out; a version stored with another value is refused.
   * @throws DocumentTooLargeError, ChannelVersionConflictError, before anything is written.
   */
  async prepare(position: BlobPosition, writes: ChannelWrite[], what: string): Promise<PreparedBlobs> {
    const perChannel = await Promise.all(writes.map((write) => this.documentsFor(position, write, what)));
    const documents = perChannel.flat();
    if (documents.length === 0) return { position, documents };
    const stored = await this.collection
      .find({ ...position, $or: documents.map(({ channel, version }) => ({ channel, version })) }, { projection: { channel: 1, version: 1, content: 1 } })
      .toArray();
    const storedContent = new Map(stored.map((d) => [pairKey(d.channel, d.version), d.content]));
    const fresh = documents.filter((doc) => {
      const key = pairKey(doc.channel, doc.version);
      if (!storedContent.has(key)) return true;
      if (storedContent.get(key) !== doc.content) throw conflict(position, doc);
      return false;
    });
    return { position, documents: fresh };
  }

  private async documentsFor(position: BlobPosition, write: ChannelWrite, what: string): Promise<BlobDocument[]> {
    const { channel, key } = write;
    const checked = (doc: BlobDocument) => {
      assertDocumentFits(doc, this.options.maxDocumentBytes, `channel "${channel}" of ${what}`);
      return doc;
    };
    const base = { ...position, channel, version: key };
    if (!write.present) return [checked({ ...base, type: EMPTY_TYPE, blob: null, content: EMPTY_TYPE })];
    if (!Array.isArray(write.value)) {
      const [type, bytes] = await this.serde.dumpsTyped(write.value);
      return [checked({ ...base, type, blob: new Binary(bytes), content: sha256(type, "\0", bytes) })];
    }
    const items = await serializeItems(this.serde, write.value);
    const links = planLinks(key, items, prefixDigests(items), write.base, this.options.linkBytes);
    return links.map((link) =>
      checked({
        ...position,
        channel,
        version: link.key,
        type: LIST_TYPE,
        blob: null,
        content: `${link.digest}:${link.count}:${link.base ?? ""}`,
        ...(link.base === undefined ? {} : { base: link.base }),
        count: link.count,
        digest: link.digest,
        items: link.items.map((item) => new Binary(item.bytes)),
        item_types: link.items.map((item) => item.type),
      }),
    );
  }

  /**
   * Writes prepared documents, bases before the links on them, each only if its key is new.
   * @throws ChannelVersionConflictError when another writer stored a different value under a key meanwhile.
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
    } catch (error) {
      const first = error instanceof MongoBulkWriteError ? [error.writeErrors].flat()[0] : undefined;
      const code = first?.code ?? (error instanceof MongoServerError ? error.code : undefined);
      if (code === DUPLICATE_KEY) throw conflict(prepared.position, prepared.documents[first?.index ?? 0], error);
      throw error;
    }
  }

  /**
   * Refreshes `upserted_at` of every blob of the position, so that values an active thread still
   * references, however long ago they were written, do not expire under the TTL index.
   */
  async touch(position: BlobPosition): Promise<void> {
    await this.collection.updateMany(position, { $set: { upserted_at: new Date() } });
  }

  /** The newest links of the list versions among `keys` (channel → key), by channel. */
  async listHeads(position: BlobPosition, keys: Map<string, string>): Promise<Map<string, ListHead>> {
    if (keys.size === 0) return new Map();
    const docs = await this.collection
      .find(
        { ...position, type: LIST_TYPE, $or: [...keys].map(([channel, version]) => ({ channel, version })) },
        { projection: { channel: 1, version: 1, count: 1, digest: 1 } },
      )
      .toArray();
    return new Map(docs.map((d) => [d.channel, { key: d.version, count: d.count ?? 0, digest: d.digest ?? "" }]));
  }

  /** Which of the (channel, key) pairs are stored. */
  async stored(position: BlobPosition, keys: [string, string][]): Promise<Set<string>> {
    if (keys.length === 0) return new Set();
    const docs = await this.collection
      .find({ ...position, $or: keys.map(([channel, version]) => ({ channel, version })) }, { projection: { channel: 1, version: 1 } })
      .toArray();
    return new Set(docs.map((d) => pairKey(d.channel, d.version)));
  }

  /** A reader for one call: the links of each list channel are fetched once, however many checkpoints it reads. */
  reader(): BlobReader {
    return new BlobReader(this.collection, this.serde);
  }

  /**
   * Deletes the versions of the position that no kept checkpoint reaches (directly or as the
   * base of a list version it reaches) and that are either older than the newest kept version of
   * their channel or stamped with an epoch `sealed` says can no longer commit; then the chunks of
   * earlier releases that no remaining version lists. Newer versions stay: they may belong to a
   * checkpoint being written.
   */
  async prune(position: BlobPosition, roots: [string, string][], sealed: (epoch: number) => boolean): Promise<number> {
    const newest = new Map<string, string>();
    for (const [channel, key] of roots) {
      const current = newest.get(channel);
      if (current === undefined || compareVersionKeys(current, key) < 0) newest.set(channel, key);
    }
    const docs = await this.collection
      .find(position, { projection: { channel: 1, version: 1, type: 1, base: 1, chunks: 1, chunk: 1, epoch: 1 } })
      .toArray();
    const byKey = new Map(docs.map((d) => [pairKey(d.channel, d.version), d]));
    const reached = new Set<string>();
    const pending = roots.map(([channel, key]) => pairKey(channel, key));
    while (pending.length > 0) {
      const key = pending.pop() as string;
      if (reached.has(key)) continue;
      reached.add(key);
      const doc = byKey.get(key);
      if (doc?.base !== undefined) pending.push(pairKey(doc.channel, doc.base));
    }
    const removable = docs.filter((doc) => {
      if (doc.chunk === true || reached.has(pairKey(doc.channel, doc.version))) return false;
      if (doc.epoch !== undefined && doc.epoch !== null && sealed(doc.epoch)) return true;
      const newestKept = newest.get(doc.channel);
      return newestKept !== undefined && compareVersionKeys(doc.version, newestKept) < 0;
    });
    let removed = 0;
    if (removable.length > 0) {
      removed += (await this.collection.deleteMany({ _id: { $in: removable.map((d) => d._id) } })).deletedCount;
    }
    const gone = new Set(removable.map((d) => d._id.toHexString()));
    const listed = docs.filter((d) => !gone.has(d._id.toHexString())).flatMap((d) => (d.chunks ?? []).map(chunkVersion));
    removed += (await this.collection.deleteMany({ ...position, chunk: true, version: { $nin: [...new Set(listed)] } })).deletedCount;
    return removed;
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

/** Reads channel values of one thread namespace or several, fetching each list channel's links once. */
export class BlobReader {
  private readonly links = new Map<string, Promise<Map<string, BlobDocument>>>();

  constructor(
    private readonly collection: Collection<BlobDocument>,
    private readonly serde: SerializerProtocol,
  ) {}

  /**
   * The values stored under `keys` (channel → key). A cleared channel has no value; `missing`
   * lists the channels whose key is not stored at all.
   * @throws ChannelValueMissingError when a list version or chunk a stored version builds on is missing.
   */
  async read(position: BlobPosition, keys: Map<string, string>): Promise<{ values: Record<string, unknown>; missing: string[] }> {
    const values: Record<string, unknown> = {};
    if (keys.size === 0) return { values, missing: [] };
    const filter: Filter<BlobDocument> = { ...position, $or: [...keys].map(([channel, version]) => ({ channel, version })) };
    const docs = await this.collection.find(filter).toArray();
    const found = new Set(docs.map((d) => d.channel));
    await Promise.all(
      docs.map(async (doc) => {
        if (doc.type === LIST_TYPE) values[doc.channel] = await this.readList(position, doc);
        else if (doc.type === CHUNKED_TYPE) values[doc.channel] = await this.readChunks(position, doc);
        else if (doc.type !== EMPTY_TYPE && doc.blob !== null) values[doc.channel] = await this.serde.loadsTyped(doc.type, doc.blob.buffer);
      }),
    );
    return { values, missing: [...keys.keys()].filter((channel) => !found.has(channel)) };
  }

  private async readList(position: BlobPosition, head: BlobDocument): Promise<unknown[]> {
    const cacheKey = JSON.stringify([position.thread_id, position.checkpoint_ns, head.channel]);
    let links = this.links.get(cacheKey);
    if (links === undefined) {
      links = this.collection
        .find({ ...position, channel: head.channel, type: LIST_TYPE })
        .toArray()
        .then((docs) => new Map(docs.map((d) => [d.version, d])));
      this.links.set(cacheKey, links);
    }
    const byKey = await links;
    const chain: BlobDocument[] = [];
    let link: BlobDocument | undefined = byKey.get(head.version) ?? head;
    while (link !== undefined) {
      chain.push(link);
      if (link.base === undefined || chain.length > byKey.size) break;
      const base: BlobDocument | undefined = byKey.get(link.base);
      if (base === undefined) throw missing(position, head, `its base ${link.base}`);
      link = base;
    }
    const items = await Promise.all(
      chain.reverse().flatMap((l) => (l.items ?? []).map((bytes, i) => this.serde.loadsTyped((l.item_types ?? [])[i] ?? "json", bytes.buffer))),
    );
    if (items.length !== head.count) throw missing(position, head, `${(head.count ?? 0) - items.length} of its items`);
    return items;
  }

  private async readChunks(position: BlobPosition, version: BlobDocument): Promise<unknown[]> {
    const hashes = version.chunks ?? [];
    const docs = await this.collection
      .find({ ...position, channel: version.channel, version: { $in: [...new Set(hashes)].map(chunkVersion) } })
      .toArray();
    const byVersion = new Map(docs.map((d) => [d.version, d]));
    const items: unknown[] = [];
    for (const hash of hashes) {
      const chunk = byVersion.get(chunkVersion(hash));
      if (!chunk?.blob) throw missing(position, version, `chunk ${hash}`);
      items.push(...((await this.serde.loadsTyped(chunk.type, chunk.blob.buffer)) as unknown[]));
    }
    return items;
  }
}

function missing(position: BlobPosition, version: BlobDocument, what: string): ChannelValueMissingError {
  return new ChannelValueMissingError(
    `${what} of channel "${version.channel}" version ${version.version} is missing`,
    position.thread_id,
    version.channel,
    version.version,
  );
}
