import type { Collection, Db } from "mongodb";
import { LIST_TYPE, type BlobDocument, type BlobPosition } from "../checkpoint/blob-reader.js";
import { ChannelBlobStore, DEFAULT_LIST_LINK_BYTES } from "../checkpoint/channel-blob-store.js";
import { CHAIN_KEYS } from "../checkpoint/list-links.js";
import { ThreadwiseSaver } from "../threadwise-saver.js";
import type { Migration } from "./migration.js";

/** A list version stored by releases before list links, as `chunks` of content-addressed chunk documents. */
export const CHUNKED_TYPE = "chunked";
/** The version under which those releases stored a chunk (`chunk: true`, its items as one serialized array). */
export const chunkVersion = (hash: string) => `chunk:${hash}`;

/** A document of `checkpoint_blobs` as releases before list links could also leave it. */
type OldBlobDocument = BlobDocument & { chunks?: string[]; chunk?: true };

/**
 * Brings list versions stored by earlier releases to the link format the reader reads: a chunked
 * version (releases before list links) becomes links holding its items, split as a put splits a
 * list, under its own key; a link without `chain` (releases before links named their ancestors)
 * gets the keys of its nearest ancestors. Not finished while a prune merges a link it reads: that
 * link is left for the next set-up.
 */
export const listLinkFormats: Migration = {
  version: 3,
  name: "list-link-formats",
  async up(db: Db) {
    const saver = new ThreadwiseSaver({ client: db.client, dbName: db.databaseName });
    const collection = db.collection<OldBlobDocument>(saver.checkpointBlobsCollectionName);
    const linkBytes = Math.min(DEFAULT_LIST_LINK_BYTES, Math.floor(saver.maxDocumentBytes / 2));
    const store = new ChannelBlobStore(collection, saver.serde, { maxDocumentBytes: saver.maxDocumentBytes, linkBytes });
    await unchunkLists(collection, store, saver);
    return addChains(collection);
  },
};

/**
 * Rewrites each chunked version as links (no base: the whole list), the links before the last
 * first, then the version itself, keeping its epoch and timestamps; then deletes the chunks, once
 * no chunked version is left. A version whose chunks are gone was unreadable and is deleted: a
 * header naming it fails to read as any missing value does.
 */
async function unchunkLists(collection: Collection<OldBlobDocument>, store: ChannelBlobStore, saver: ThreadwiseSaver): Promise<void> {
  for await (const version of collection.find({ type: CHUNKED_TYPE })) {
    const position: BlobPosition = { thread_id: version.thread_id, checkpoint_ns: version.checkpoint_ns };
    const hashes = version.chunks ?? [];
    const chunks = await collection.find({ ...position, channel: version.channel, version: { $in: [...new Set(hashes)].map(chunkVersion) } }).toArray();
    const byVersion = new Map(chunks.map((chunk) => [chunk.version, chunk]));
    const items: unknown[] = [];
    let whole = true;
    for (const hash of hashes) {
      const chunk = byVersion.get(chunkVersion(hash));
      if (!chunk?.blob) {
        whole = false;
        break;
      }
      items.push(...((await saver.serde.loadsTyped(chunk.type, chunk.blob.buffer)) as unknown[]));
    }
    if (!whole) {
      await collection.deleteOne({ _id: version._id, type: CHUNKED_TYPE });
      continue;
    }
    const { documents } = await store.prepare(
      position,
      [{ channel: version.channel, key: version.version, list: items }],
      `chunked version ${version.version}`,
    );
    const stamp = {
      ...(version.epoch === undefined ? {} : { epoch: version.epoch }),
      ...(version.upserted_at === undefined ? {} : { upserted_at: version.upserted_at }),
      ...(version.expiresAt === undefined ? {} : { expiresAt: version.expiresAt }),
    };
    for (const link of documents.slice(0, -1)) {
      await collection.replaceOne({ ...position, channel: link.channel, version: link.version }, { ...link, ...stamp }, { upsert: true });
    }
    await collection.replaceOne({ _id: version._id, type: CHUNKED_TYPE }, { ...(documents.at(-1) as BlobDocument), ...stamp });
  }
  if ((await collection.countDocuments({ type: CHUNKED_TYPE }, { limit: 1 })) === 0) await collection.deleteMany({ chunk: true });
}

/**
 * Gives every list link without `chain` the keys of its nearest ancestors (at most `CHAIN_KEYS`),
 * walking the bases of its channel's links. A link whose base changed meanwhile (merged by a
 * prune) is left as it is, and the migration is then not finished.
 */
async function addChains(collection: Collection<OldBlobDocument>): Promise<boolean> {
  const channels = new Map<string, BlobPosition & { channel: string }>();
  const chainless = collection.find({ type: LIST_TYPE, chain: { $exists: false } }, { projection: { thread_id: 1, checkpoint_ns: 1, channel: 1 } });
  for await (const { thread_id, checkpoint_ns, channel } of chainless)
    channels.set(JSON.stringify([thread_id, checkpoint_ns, channel]), { thread_id, checkpoint_ns, channel });
  let finished = true;
  for (const where of channels.values()) {
    const links = await collection.find({ ...where, type: LIST_TYPE }, { projection: { version: 1, base: 1, chain: 1 } }).toArray();
    const byKey = new Map(links.map((link) => [link.version, link]));
    for (const link of links.filter((l) => l.chain === undefined)) {
      const chain: string[] = [];
      for (let key = link.base; key !== undefined && chain.length < CHAIN_KEYS && !chain.includes(key); key = byKey.get(key)?.base) chain.push(key);
      const unchanged = link.base === undefined ? { base: { $exists: false } } : { base: link.base };
      const updated = await collection.updateOne({ _id: link._id, chain: { $exists: false }, ...unchanged }, { $set: { chain } });
      if (updated.matchedCount !== 1) finished = false;
    }
  }
  return finished;
}
