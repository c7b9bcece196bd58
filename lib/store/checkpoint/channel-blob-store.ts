import { createHash } from "node:crypto";
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { Binary, MongoBulkWriteError, MongoServerError, type AnyBulkWriteOperation, type Collection, type ObjectId, type WithId } from "mongodb";
import { ChannelValueMissingError, ChannelVersionConflictError } from "../../errors.js";
import { ByteBoundedMap } from "../../byte-bounded-map.js";
import { compareVersionKeys } from "./channel-versions.js";
import { assertDocumentFits } from "./document-size.js";
import { ItemCodec } from "./item-codec.js";
import { CHAIN_KEYS, EMPTY_LIST_DIGEST, groupItems, nextDigest, planLinks, type ListHead, type SerializedItem } from "./list-links.js";

/**
 * Serialized bytes of list items per stored link, and the most prune merges into one link. A new
 * version of the message list stores only the messages a step appended, usually far less; a list
 * stored whole is split into links of this size. One item larger than this gets a link of its own,
 * as large as the item (up to the saver's `maxDocumentBytes`, 4 MB by default): the only document
 * of a thread that can be larger than this plus a few KB of the link's own fields.
 */
export const DEFAULT_LIST_LINK_BYTES = 128 * 1024;

/** Marks a channel cleared at this version, in documents of earlier releases (headers now list such channels). */
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
  /** A list link: the link it appends to, the list's length and digest up to it, its items and their bytes. */
  base?: string;
  count?: number;
  digest?: string;
  /** Keys of the links before it, nearest first (see `CHAIN_KEYS`); absent on links of earlier releases. */
  chain?: string[];
  items?: Binary[];
  item_types?: string[];
  bytes?: number;
  /** Earlier releases' chunked list versions and chunks. */
  chunks?: string[];
  chunk?: true;
  /** The fenced writer's epoch, so that prune can drop what a stale writer left. */
  epoch?: number;
  upserted_at?: Date;
  expiresAt?: Date;
}

/** What {@link ChannelBlobStore.compactLists} did: list documents rewritten, and their items' bytes before and after. */
export interface ListCompaction {
  rewritten: number;
  itemBytesBefore: number;
  itemBytesAfter: number;
}

/** A channel value to store under `key`: a list (which may extend the stored version `base`), or a serialized value. */
export type ChannelWrite = { channel: string; key: string; list: unknown[]; base?: ListHead } | { channel: string; key: string; serialized: SerializedItem };

/** Channel values serialized and size-checked, ready to be written. */
export interface PreparedBlobs {
  position: BlobPosition;
  documents: BlobDocument[];
}

const pairKey = (channel: string, key: string) => `${channel}\u0000${key}`;
const headKey = (position: BlobPosition, channel: string, key: string) => JSON.stringify([position.thread_id, position.checkpoint_ns, channel, key]);
/** Bytes of list heads a store remembers (least recently used forgotten first): about a thousand heads of 32-key chains. */
export const DEFAULT_REMEMBERED_HEAD_BYTES = 2 * 1024 * 1024;
/** A remembered head's bytes: its strings as UTF-16, and a few numbers and references. */
const headBytes = (key: string, head: ListHead) =>
  2 * (key.length + head.key.length + head.digest.length + (head.chain ?? []).reduce((n, k) => n + k.length, 0)) + 96;
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
  private readonly heads = new ByteBoundedMap<string, ListHead>(DEFAULT_REMEMBERED_HEAD_BYTES, headBytes);
  private readonly codec: ItemCodec;

  constructor(
    private readonly collection: Collection<BlobDocument>,
    private readonly serde: SerializerProtocol,
    private readonly options: { maxDocumentBytes: number; linkBytes: number },
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
   * Serializes the values and checks every document against the size limit.
   * @throws DocumentTooLargeError before anything is written.
   */
  async prepare(position: BlobPosition, writes: ChannelWrite[], what: string): Promise<PreparedBlobs> {
    const perChannel = await Promise.all(writes.map((write) => this.documentsFor(position, write, what)));
    return { position, documents: perChannel.flat() };
  }

  private async documentsFor(position: BlobPosition, write: ChannelWrite, what: string): Promise<BlobDocument[]> {
    const { channel, key } = write;
    const checked = (doc: BlobDocument) => {
      assertDocumentFits(doc, this.options.maxDocumentBytes, `channel "${channel}" of ${what}`);
      return doc;
    };
    if ("serialized" in write) {
      const { type, bytes } = write.serialized;
      return [checked({ ...position, channel, version: key, type, blob: new Binary(bytes), content: sha256(type, "\0", bytes) })];
    }
    const items = await Promise.all(write.list.map((item) => this.codec.serialize(item)));
    const links = planLinks(key, items, this.codec.digests(write.list, items), write.base, this.options.linkBytes);
    return links.map((link) =>
      checked({
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
        items: link.items.map((item) => new Binary(item.bytes)),
        item_types: link.items.map((item) => item.type),
        bytes: link.items.reduce((sum, item) => sum + item.bytes.byteLength, 0),
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
    return new BlobReader(this.collection, this.serde, this.codec, forWriting);
  }

  /**
   * Deletes the versions of the position that no kept checkpoint reaches (directly or as the
   * base of a list version it reaches) and that are either older than the newest kept version of
   * their channel or stamped with an epoch `sealed` says can no longer commit; then the chunks of
   * earlier releases that no remaining version lists. Newer versions stay: they may belong to a
   * checkpoint being written. Finally merges the list links between kept versions (see
   * {@link mergeLinks}).
   *
   * With `since`, only documents inserted since (by `_id`) are examined: `roots` must then name
   * every kept version any of them can reach, which holds when they are the keys of the kept
   * checkpoints inserted since (a checkpoint names only values stored before it, and a link builds
   * only on older links). `guard` runs before each write.
   */
  async prune(
    position: BlobPosition,
    roots: [string, string][],
    sealed: (epoch: number) => boolean,
    options: { since?: ObjectId; guard?: () => Promise<void> } = {},
  ): Promise<number> {
    const guard = options.guard ?? (async () => {});
    const newest = new Map<string, string>();
    for (const [channel, key] of roots) {
      const current = newest.get(channel);
      if (current === undefined || compareVersionKeys(current, key) < 0) newest.set(channel, key);
    }
    const docs = await this.collection
      .find(options.since === undefined ? position : { ...position, _id: { $gte: options.since } }, {
        projection: { channel: 1, version: 1, type: 1, base: 1, chain: 1, chunks: 1, chunk: 1, epoch: 1, bytes: 1 },
      })
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
      await guard();
      removed += (await this.collection.deleteMany({ _id: { $in: removable.map((d) => d._id) } })).deletedCount;
    }
    const gone = new Set(removable.map((d) => d._id.toHexString()));
    const remaining = docs.filter((d) => !gone.has(d._id.toHexString()));
    // Chunks are of earlier releases only: cleaned up when the whole position is examined.
    if (options.since === undefined && remaining.some((d) => d.chunk === true)) {
      const listed = remaining.flatMap((d) => (d.chunks ?? []).map(chunkVersion));
      await guard();
      removed += (await this.collection.deleteMany({ ...position, chunk: true, version: { $nin: [...new Set(listed)] } })).deletedCount;
    }
    removed += await this.mergeLinks(remaining, new Set(roots.map(([channel, key]) => pairKey(channel, key))), guard);
    return removed;
  }

  /**
   * Merges into each list version a kept checkpoint names the links behind it that only it
   * builds on, up to the link size: what a turn appended step by step becomes one document. The
   * version keeps its key, count and digest (the list it stands for does not change); the merged
   * links go. Each merge replaces the version only if it is unchanged since it was listed (a
   * concurrent prune may have merged it) and only once every link it merges was read back; so two
   * prunes never merge the same links twice. A reader that fetched the links before the merge
   * finds its chain broken and reads them again.
   */
  private async mergeLinks(docs: WithId<BlobDocument>[], roots: Set<string>, guard: () => Promise<void>): Promise<number> {
    const links = docs.filter((d) => d.type === LIST_TYPE);
    const byKey = new Map(links.map((d) => [pairKey(d.channel, d.version), d]));
    const referrers = new Map<string, number>();
    for (const link of links) {
      if (link.base !== undefined) referrers.set(pairKey(link.channel, link.base), (referrers.get(pairKey(link.channel, link.base)) ?? 0) + 1);
    }
    let removed = 0;
    for (const root of links.filter((d) => roots.has(pairKey(d.channel, d.version)))) {
      const merged: WithId<BlobDocument>[] = [];
      let bytes = root.bytes ?? Infinity;
      let current = root;
      while (current.base !== undefined) {
        const key = pairKey(root.channel, current.base);
        const base = byKey.get(key);
        if (base === undefined || roots.has(key) || referrers.get(key) !== 1 || bytes + (base.bytes ?? Infinity) > this.options.linkBytes) break;
        merged.push(base);
        bytes += base.bytes ?? 0;
        current = base;
      }
      if (merged.length === 0) continue;
      const full = await this.collection.find({ _id: { $in: [root, ...merged].map((d) => d._id) } }).toArray();
      const byId = new Map(full.map((d) => [d._id.toHexString(), d]));
      const fullRoot = byId.get(root._id.toHexString());
      // Merged or removed by another prune since they were listed.
      if (fullRoot === undefined || fullRoot.base !== root.base || merged.some((d) => byId.get(d._id.toHexString())?.base !== d.base)) continue;
      const ordered = [...merged.reverse(), root].map((d) => byId.get(d._id.toHexString()) as WithId<BlobDocument>);
      const { _id, base: _base, chain, ...rootFields } = fullRoot;
      const newBase = merged[0].base;
      await guard();
      const replaced = await this.collection.replaceOne(
        { _id: root._id, base: root.base },
        {
          ...rootFields,
          ...(newBase === undefined ? {} : { base: newBase }),
          ...(chain === undefined ? {} : { chain: chain.slice(merged.length) }),
          items: ordered.flatMap((d) => d.items ?? []),
          item_types: ordered.flatMap((d) => d.item_types ?? []),
          bytes,
        },
      );
      if (replaced.modifiedCount !== 1) continue;
      removed += (await this.collection.deleteMany({ _id: { $in: merged.map((d) => d._id) } })).deletedCount;
    }
    return removed;
  }

  /**
   * Rewrites the list versions of the position that earlier releases stored whole (no `base`: a
   * copy of the whole list at every turn boundary, issue 28) or larger than a link, into the form
   * puts write now: a version whose list starts with the list of an older stored version of its
   * channel (item by item, in canonical form: what a reader loads) becomes a link on that version
   * holding only the items after it, and what remains is split into links of at most `linkBytes`
   * (the last keeps the version's key, count and content; the others are `<key>#c<n>`). Digests are
   * recomputed from the stored bytes, down to the links built on a rewritten one, so the next put
   * extends what it reads. Nothing a checkpoint reads changes; each rewrite replaces one document
   * after the links it builds on are written, so a reader or a crash in between finds a whole list.
   * `guard` runs before each write. Returns the documents rewritten and the bytes of list items
   * stored before and after.
   */
  async compactLists(position: BlobPosition, guard: () => Promise<void> = async () => {}): Promise<ListCompaction> {
    const result: ListCompaction = { rewritten: 0, itemBytesBefore: 0, itemBytesAfter: 0 };
    const docs = await this.collection
      .find({ ...position, type: LIST_TYPE }, { projection: { channel: 1, version: 1, base: 1, count: 1, digest: 1, chain: 1, bytes: 1 } })
      .toArray();
    const channels = new Map<string, WithId<BlobDocument>[]>();
    for (const doc of docs) channels.set(doc.channel, [...(channels.get(doc.channel) ?? []), doc]);
    for (const [channel, links] of channels) {
      // Bases before the links on them: a base holds fewer items than any link on it.
      links.sort((a, b) => (a.count ?? 0) - (b.count ?? 0) || compareVersionKeys(a.version, b.version));
      const heads = new Map(links.map((l) => [l.version, { digest: l.digest ?? "", chain: l.chain ?? [] }]));
      const redigested = new Set<string>();
      for (const link of links) {
        const count = link.count ?? 0;
        const whole = link.base === undefined && count > 1;
        const large = (link.bytes ?? 0) > this.options.linkBytes;
        if (!whole && !large && !(link.base !== undefined && redigested.has(link.base))) continue;
        const full = await this.collection.findOne({ _id: link._id });
        if (full === null) continue;
        let items: SerializedItem[] = (full.items ?? []).map((bytes, i) => ({ type: (full.item_types ?? [])[i] ?? "json", bytes: bytes.buffer }));
        let base = full.base;
        if (whole) {
          const prefix = links.filter((l) => (l.count ?? 0) > 0 && (l.count ?? 0) < count && l.version !== link.version).pop();
          if (prefix !== undefined && (await this.startsWith(position, channel, prefix, items))) {
            items = items.slice(prefix.count ?? 0);
            base = prefix.version;
          }
        }
        if (base === full.base && !large && !redigested.has(full.base ?? "")) continue;
        const baseHead = base === undefined ? undefined : heads.get(base);
        let digest = baseHead?.digest ?? EMPTY_LIST_DIGEST;
        let chain = base === undefined ? [] : [base, ...(baseHead?.chain ?? [])].slice(0, CHAIN_KEYS);
        const groups = groupItems(items, this.options.linkBytes);
        let previous = base;
        let itemCount = count - items.length;
        const written: BlobDocument[] = [];
        groups.forEach((group, i) => {
          for (const item of group) digest = nextDigest(digest, item);
          itemCount += group.length;
          const last = i === groups.length - 1;
          const { _id, base: _oldBase, chain: _oldChain, ...fields } = full;
          written.push({
            ...fields,
            version: last ? full.version : `${full.version}#c${i}`,
            content: `${digest}:${itemCount}`,
            ...(previous === undefined ? {} : { base: previous }),
            count: itemCount,
            digest,
            chain,
            items: group.map((item) => new Binary(item.bytes)),
            item_types: group.map((item) => item.type),
            bytes: group.reduce((sum, item) => sum + item.bytes.byteLength, 0),
          });
          previous = written[written.length - 1].version;
          chain = [previous, ...chain].slice(0, CHAIN_KEYS);
        });
        for (const doc of written) assertDocumentFits(doc, this.options.maxDocumentBytes, `channel "${channel}" compacted`);
        const rewritten = written[written.length - 1];
        await guard();
        for (const doc of written.slice(0, -1)) {
          const { channel: c, version } = doc;
          await this.collection.replaceOne({ ...position, channel: c, version }, doc, { upsert: true });
        }
        const unchanged = full.base === undefined ? { base: { $exists: false } } : { base: full.base };
        const replaced = await this.collection.replaceOne({ _id: full._id, count: full.count, ...unchanged }, rewritten);
        if (replaced.modifiedCount !== 1) continue;
        result.rewritten += 1;
        result.itemBytesBefore += full.bytes ?? 0;
        result.itemBytesAfter += written.reduce((sum, d) => sum + (d.bytes ?? 0), 0);
        heads.set(full.version, { digest: rewritten.digest ?? "", chain: rewritten.chain ?? [] });
        if (rewritten.digest !== full.digest) redigested.add(full.version);
        this.heads.delete(headKey(position, channel, full.version));
      }
    }
    return result;
  }

  /** Whether the list `items` starts with the list stored as `prefix`, item by item as a reader loads them. */
  private async startsWith(position: BlobPosition, channel: string, prefix: BlobDocument, items: SerializedItem[]): Promise<boolean> {
    const count = prefix.count ?? 0;
    if (count > items.length) return false;
    const { values } = await this.reader().read(position, new Map([[channel, prefix.version]]));
    const stored = values[channel];
    if (!Array.isArray(stored) || stored.length !== count) return false;
    for (let i = 0; i < count; i++) {
      const [a, b] = await Promise.all([this.canonical(stored[i]), this.canonical(await this.serde.loadsTyped(items[i].type, items[i].bytes))]);
      if (a.type !== b.type || Buffer.compare(a.bytes, b.bytes) !== 0) return false;
    }
    return true;
  }

  /** An item's bytes as a stored-and-loaded copy of it serializes (see `ItemCodec`). */
  private async canonical(item: unknown): Promise<SerializedItem> {
    const [firstType, first] = await this.serde.dumpsTyped(item);
    if (firstType !== "json") return { type: firstType, bytes: first };
    const [type, bytes] = await this.serde.dumpsTyped(await this.serde.loadsTyped(firstType, first));
    return { type, bytes };
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

/** Reads channel values of one thread namespace or several, fetching each list link once. */
export class BlobReader {
  /** The list links fetched so far, by position and channel, then by key. */
  private readonly known = new Map<string, Map<string, BlobDocument>>();
  private readonly whole = new Set<string>();

  constructor(
    private readonly collection: Collection<BlobDocument>,
    private readonly serde: SerializerProtocol,
    private readonly codec: ItemCodec,
    private readonly forWriting: boolean,
  ) {}

  private linksOf(position: BlobPosition, channel: string): Map<string, BlobDocument> {
    const cacheKey = JSON.stringify([position.thread_id, position.checkpoint_ns, channel]);
    let links = this.known.get(cacheKey);
    if (links === undefined) this.known.set(cacheKey, (links = new Map()));
    return links;
  }

  /** Fetches the links of the channel stored under `keys` that this reader does not have yet. */
  private async fetch(position: BlobPosition, channel: string, keys: string[]): Promise<void> {
    const links = this.linksOf(position, channel);
    const wanted = [...new Set(keys)].filter((key) => !links.has(key));
    if (wanted.length === 0) return;
    const docs = await this.collection.find({ ...position, channel, type: LIST_TYPE, version: { $in: wanted } }).toArray();
    for (const doc of docs) links.set(doc.version, doc);
  }

  /** Every link of the channel: for links of earlier releases, which do not name their ancestors. */
  private async fetchAll(position: BlobPosition, channel: string): Promise<void> {
    const cacheKey = JSON.stringify([position.thread_id, position.checkpoint_ns, channel]);
    if (this.whole.has(cacheKey)) return;
    const links = this.linksOf(position, channel);
    for (const doc of await this.collection.find({ ...position, channel, type: LIST_TYPE }).toArray()) links.set(doc.version, doc);
    this.whole.add(cacheKey);
  }

  private forget(position: BlobPosition, channel: string): void {
    const cacheKey = JSON.stringify([position.thread_id, position.checkpoint_ns, channel]);
    this.known.delete(cacheKey);
    this.whole.delete(cacheKey);
  }

  /**
   * The values stored under `keys` (channel → key). A cleared channel has no value; `missing`
   * lists the channels whose key is not stored at all.
   * @throws ChannelValueMissingError when a list version or chunk a stored version builds on is missing.
   */
  async read(position: BlobPosition, keys: Map<string, string>): Promise<{ values: Record<string, unknown>; missing: string[] }> {
    const values: Record<string, unknown> = {};
    if (keys.size === 0) return { values, missing: [] };
    const pending = [...keys].filter(([channel, version]) => !this.linksOf(position, channel).has(version));
    const docs =
      pending.length === 0 ? [] : await this.collection.find({ ...position, $or: pending.map(([channel, version]) => ({ channel, version })) }).toArray();
    for (const doc of docs) if (doc.type === LIST_TYPE) this.linksOf(position, doc.channel).set(doc.version, doc);
    const byChannel = new Map<string, BlobDocument>(docs.map((d) => [d.channel, d]));
    for (const [channel, version] of keys) {
      const link = this.linksOf(position, channel).get(version);
      if (link !== undefined) byChannel.set(channel, link);
    }
    await Promise.all(
      [...byChannel.values()].map(async (doc) => {
        if (doc.type === LIST_TYPE) values[doc.channel] = await this.readList(position, doc);
        else if (doc.type === CHUNKED_TYPE) values[doc.channel] = await this.readChunks(position, doc);
        else if (doc.type !== EMPTY_TYPE && doc.blob !== null) values[doc.channel] = await this.serde.loadsTyped(doc.type, doc.blob.buffer);
      }),
    );
    return { values, missing: [...keys.keys()].filter((channel) => !byChannel.has(channel)) };
  }

  private async readList(position: BlobPosition, head: BlobDocument): Promise<unknown[]> {
    let chain = await this.chain(position, head);
    if (typeof chain === "string" || countOf(chain) !== head.count) {
      // Merged by prune after this reader fetched some of its links: fetch them again.
      this.forget(position, head.channel);
      await this.fetch(position, head.channel, [head.version]);
      const fresh = this.linksOf(position, head.channel).get(head.version);
      chain = fresh === undefined ? "its items" : await this.chain(position, fresh);
    }
    if (typeof chain === "string") throw missing(position, head, chain);
    if (countOf(chain) !== head.count) throw missing(position, head, `${(head.count ?? 0) - countOf(chain)} of its items`);
    const serialized = chain.flatMap((l) =>
      (l.items ?? []).map((bytes, i): SerializedItem => ({ type: (l.item_types ?? [])[i] ?? "json", bytes: bytes.buffer })),
    );
    const items = await Promise.all(serialized.map(({ type, bytes }) => this.codec.load(type, bytes)));
    if (this.forWriting) this.codec.digests(items, serialized);
    return items;
  }

  /**
   * The links of a list version, oldest first, or what is missing. Walks the bases from the head;
   * a base not fetched yet is fetched with the ancestors the link before it names, so a chain of
   * `n` links takes about `n / CHAIN_KEYS` round trips.
   */
  private async chain(position: BlobPosition, head: BlobDocument): Promise<BlobDocument[] | string> {
    const links = this.linksOf(position, head.channel);
    const chain: BlobDocument[] = [];
    let link: BlobDocument = head;
    while (link.base !== undefined) {
      chain.push(link);
      const baseKey = link.base;
      if (!links.has(baseKey)) {
        if (link.chain === undefined) await this.fetchAll(position, head.channel);
        else await this.fetch(position, head.channel, [baseKey, ...link.chain]);
      }
      const base = links.get(baseKey);
      if (base === undefined) return `its base ${baseKey}`;
      if (chain.length > links.size) return `its base ${baseKey} (a cycle)`;
      link = base;
    }
    chain.push(link);
    return chain.reverse();
  }

  private async readChunks(position: BlobPosition, version: BlobDocument): Promise<unknown[]> {
    const hashes = version.chunks ?? [];
    const docs = await this.collection.find({ ...position, channel: version.channel, version: { $in: [...new Set(hashes)].map(chunkVersion) } }).toArray();
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

/** Items in a chain of links. */
function countOf(chain: BlobDocument[]): number {
  return chain.reduce((sum, link) => sum + (link.items?.length ?? 0), 0);
}

function missing(position: BlobPosition, version: BlobDocument, what: string): ChannelValueMissingError {
  return new ChannelValueMissingError(
    `${what} of channel "${version.channel}" version ${version.version} is missing`,
    position.thread_id,
    version.channel,
    version.version,
  );
}
