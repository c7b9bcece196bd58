import { createHash } from "node:crypto";
import { compareChannelVersions, maxChannelVersion, type ChannelVersions, type SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { Binary, type AnyBulkWriteOperation, type Collection } from "mongodb";
import { ThreadwiseError } from "../../errors.js";
import { assertDocumentFits } from "./document-size.js";

/**
 * A list channel longer than this is stored as chunks of this many items, each chunk once per
 * content. The message list grows at its end, so a new version shares every full chunk with the
 * previous one and writes only its last chunk and a list of chunk hashes.
 */
export const DEFAULT_CHUNK_ITEMS = 16;

/** Marks a channel that was cleared at this version; it has no value to restore. */
const EMPTY_TYPE = "empty";
/** Marks a version stored as a list of chunks (`chunks`), not as one value. */
const CHUNKED_TYPE = "chunked";

/** Where a thread's channel values live: one thread, one checkpoint namespace. */
export interface BlobPosition {
  thread_id: string;
  checkpoint_ns: string;
}

/**
 * One document of `checkpoint_blobs`: a channel value at a version, or, with `chunk: true`, a
 * chunk of a list value, its `version` being `chunk:<sha256 of its serialized items>`.
 */
export interface BlobDocument extends BlobPosition {
  channel: string;
  version: string;
  type: string;
  blob: Binary | null;
  /** Hashes of the chunks, in order, of a `chunked` version. */
  chunks?: string[];
  chunk?: true;
  upserted_at?: Date;
}

/** Channel values serialized and size-checked, ready to be written. */
export interface PreparedBlobs {
  position: BlobPosition;
  documents: BlobDocument[];
}

const chunkVersion = (hash: string) => `chunk:${hash}`;

/** Blob versions are stored as strings; numeric ones compare as numbers, as LangGraph's do. */
function versionOf(stored: string): string | number {
  const asNumber = Number(stored);
  return stored.trim() !== "" && Number.isFinite(asNumber) ? asNumber : stored;
}

/**
 * The `checkpoint_blobs` collection: channel values keyed by (thread, namespace, channel,
 * version), list values split into content-addressed chunks shared between versions.
 *
 * Invariants: chunks are written before the version that lists them (one ordered bulk write),
 * and a chunk is deleted only when no remaining version lists it; so every stored version can
 * be read back whole.
 */
export class ChannelBlobStore {
  constructor(
    private readonly collection: Collection<BlobDocument>,
    private readonly serde: SerializerProtocol,
    private readonly options: { maxDocumentBytes: number; timestamps: boolean },
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
   * Serializes the values of `versions` (a channel absent from `values` was cleared) and checks
   * every document against the size limit. Chunks already stored for the channel are left out.
   */
  async prepare(
    position: BlobPosition,
    values: Record<string, unknown>,
    versions: ChannelVersions,
    what: string,
  ): Promise<PreparedBlobs> {
    const perChannel = await Promise.all(
      Object.entries(versions).map(([channel, version]) =>
        this.prepareChannel(position, channel, String(version), channel in values, values[channel], what),
      ),
    );
    return { position, documents: perChannel.flat() };
  }

  private async prepareChannel(
    position: BlobPosition,
    channel: string,
    version: string,
    present: boolean,
    value: unknown,
    what: string,
  ): Promise<BlobDocument[]> {
    const base = { ...position, channel, version };
    const checked = (doc: BlobDocument) => {
      assertDocumentFits(doc, this.options.maxDocumentBytes, `channel "${channel}" of ${what}`);
      return doc;
    };
    if (!present) return [checked({ ...base, type: EMPTY_TYPE, blob: null })];
    if (!Array.isArray(value) || value.length <= DEFAULT_CHUNK_ITEMS) {
      const [type, bytes] = await this.serde.dumpsTyped(value);
      return [checked({ ...base, type, blob: new Binary(bytes) })];
    }
    const slices: unknown[][] = [];
    for (let start = 0; start < value.length; start += DEFAULT_CHUNK_ITEMS) slices.push(value.slice(start, start + DEFAULT_CHUNK_ITEMS));
    const [chunks, stored] = await Promise.all([
      Promise.all(
        slices.map(async (slice) => {
          const [type, bytes] = await this.serde.dumpsTyped(slice);
          const hash = createHash("sha256").update(type).update("\0").update(bytes).digest("hex");
          return { hash, doc: { ...position, channel, version: chunkVersion(hash), type, blob: new Binary(bytes), chunk: true as const } };
        }),
      ),
      this.storedChunks(position, channel),
    ]);
    const fresh = new Map(chunks.filter((c) => !stored.has(c.hash)).map((c) => [c.hash, checked(c.doc)]));
    return [...fresh.values(), checked({ ...base, type: CHUNKED_TYPE, blob: null, chunks: chunks.map((c) => c.hash) })];
  }

  /** Hashes listed by the stored versions of the channel; by the invariant, all present. */
  private async storedChunks(position: BlobPosition, channel: string): Promise<Set<string>> {
    const versions = await this.collection.find({ ...position, channel, type: CHUNKED_TYPE }).toArray();
    return new Set(versions.flatMap((v) => v.chunks ?? []));
  }

  /** Writes prepared documents, chunks first, in one ordered bulk write. */
  async write(prepared: PreparedBlobs): Promise<void> {
    if (prepared.documents.length === 0) return;
    const stamp = this.options.timestamps ? { upserted_at: new Date() } : {};
    const operations: AnyBulkWriteOperation<BlobDocument>[] = prepared.documents.map(
      ({ thread_id, checkpoint_ns, channel, version, type, blob, chunks, chunk }) => ({
        updateOne: {
          filter: { thread_id, checkpoint_ns, channel, version },
          // $set, not $setOnInsert: a retry after a crash recomputes the same version and its value wins.
          update:
            chunks === undefined
              ? { $set: { type, blob, ...(chunk ? { chunk } : {}), ...stamp }, $unset: { chunks: "" } }
              : { $set: { type, blob, chunks, ...stamp } },
          upsert: true,
        },
      }),
    );
    await this.collection.bulkWrite(operations, { ordered: true });
  }

  /**
   * Refreshes `upserted_at` of every blob of the position, so that values an active thread still
   * references, however long ago they were written, do not expire under the TTL index.
   */
  async touch(position: BlobPosition): Promise<void> {
    await this.collection.updateMany(position, { $set: { upserted_at: new Date() } });
  }

  /** The channel values at `versions`; channels without a stored value are left out. */
  async read(position: BlobPosition, versions: ChannelVersions): Promise<Record<string, unknown>> {
    const entries = Object.entries(versions ?? {});
    if (entries.length === 0) return {};
    const docs = await this.collection
      .find({ ...position, $or: entries.map(([channel, version]) => ({ channel, version: String(version) })) })
      .toArray();
    const values: Record<string, unknown> = {};
    await Promise.all(
      docs.map(async (doc) => {
        if (doc.type === CHUNKED_TYPE) values[doc.channel] = await this.readChunks(position, doc);
        else if (doc.type !== EMPTY_TYPE && doc.blob !== null) values[doc.channel] = await this.serde.loadsTyped(doc.type, doc.blob.buffer);
      }),
    );
    return values;
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
      if (!chunk?.blob) {
        throw new ThreadwiseError(`chunk ${hash} of channel "${version.channel}" version ${version.version} is missing`);
      }
      items.push(...((await this.serde.loadsTyped(chunk.type, chunk.blob.buffer)) as unknown[]));
    }
    return items;
  }

  /**
   * Deletes the versions of the position that no kept checkpoint references and that a kept
   * checkpoint has superseded, then the chunks no remaining version lists. Versions newer than
   * every kept reference stay: they may belong to a checkpoint being written.
   */
  async prune(position: BlobPosition, kept: ChannelVersions[]): Promise<number> {
    const referenced = new Set<string>();
    const newest = new Map<string, string | number>();
    for (const versions of kept) {
      for (const [channel, version] of Object.entries(versions)) {
        referenced.add(JSON.stringify([channel, String(version)]));
        const current = newest.get(channel);
        newest.set(channel, current === undefined ? version : maxChannelVersion(current, version));
      }
    }
    const versions = await this.collection
      .find({ ...position, chunk: { $ne: true } }, { projection: { channel: 1, version: 1, type: 1, chunks: 1 } })
      .toArray();
    const superseded = versions.filter((doc) => {
      if (referenced.has(JSON.stringify([doc.channel, doc.version]))) return false;
      const newestKept = newest.get(doc.channel);
      return newestKept !== undefined && compareChannelVersions(versionOf(doc.version), newestKept) < 0;
    });
    let removed = 0;
    if (superseded.length > 0) {
      removed += (await this.collection.deleteMany({ _id: { $in: superseded.map((d) => d._id) } })).deletedCount;
    }
    const gone = new Set(superseded.map((d) => d._id.toHexString()));
    const listed = versions.filter((d) => !gone.has(d._id.toHexString())).flatMap((d) => (d.chunks ?? []).map(chunkVersion));
    removed += (await this.collection.deleteMany({ ...position, chunk: true, version: { $nin: [...new Set(listed)] } })).deletedCount;
    return removed;
  }

  /** Deletes every blob of the thread, in every namespace. */
  async deleteThread(threadId: string): Promise<void> {
    await this.collection.deleteMany({ thread_id: threadId });
  }
}
