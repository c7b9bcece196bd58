import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { Binary, type Collection, type ObjectId, type WithId } from "mongodb";
import { compareVersionKeys } from "./channel-versions.js";
import { type BlobDocument, type BlobPosition, type BlobReader, LIST_TYPE, chunkVersion, pairKey } from "./blob-reader.js";
import { assertDocumentFits } from "./document-size.js";
import { CHAIN_KEYS, EMPTY_LIST_DIGEST, groupItems, nextDigest, type SerializedItem } from "./list-links.js";

/** What {@link ChannelBlobStore.compactLists} did: list documents rewritten, and their items' bytes before and after. */
export interface ListCompaction {
  rewritten: number;
  itemBytesBefore: number;
  itemBytesAfter: number;
}

/**
 * The removing and rewriting side of `checkpoint_blobs` (its writer is `ChannelBlobStore`, its
 * reader `BlobReader`): prune of the versions no kept checkpoint reaches, the merge of a turn's
 * list links, and the compaction of list versions stored whole by earlier releases.
 */
export class BlobPruner {
  constructor(
    private readonly collection: Collection<BlobDocument>,
    private readonly serde: SerializerProtocol,
    private readonly options: { linkBytes: number; maxDocumentBytes: number },
    /** A reader for one call (see `ChannelBlobStore.reader`). */
    private readonly reader: () => BlobReader,
    /** Called for each list version rewritten, whose remembered head is then stale. */
    private readonly onRewritten: (position: BlobPosition, channel: string, version: string) => void,
  ) {}

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
        this.onRewritten(position, channel, full.version);
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
}
