import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import type { Binary, Collection } from "mongodb";
import { ChannelValueMissingError } from "../../errors.js";
import { CheckpointContents, checkpointRefs } from "./checkpoint-contents.js";
import type { ItemCodec } from "./item-codec.js";
import type { SerializedItem } from "./list-links.js";

/** Marks a channel cleared at this version, in documents of earlier releases (headers now list such channels). */
export const EMPTY_TYPE = "empty";
/** A version of a list channel (or a link of one): items appended to its `base`. */
export const LIST_TYPE = "list";

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
  /** Keys of the links before it, nearest first (see `CHAIN_KEYS`); migration 003 gave links of earlier releases theirs. */
  chain?: string[];
  items?: Binary[];
  item_types?: string[];
  bytes?: number;
  /** The fenced writer's epoch, so that prune can drop what a stale writer left. */
  epoch?: number;
  upserted_at?: Date;
  expiresAt?: Date;
}

/** The key of a (channel, version key) pair in sets and maps. */
export const pairKey = (channel: string, key: string) => `${channel}\u0000${key}`;

/** Reads channel values of one thread namespace or several, fetching each list link once. */
export class BlobReader {
  /** The list links fetched so far, by position and channel, then by key. */
  private readonly known = new Map<string, Map<string, BlobDocument>>();

  constructor(
    private readonly collection: Collection<BlobDocument>,
    private readonly serde: SerializerProtocol,
    private readonly codec: ItemCodec,
    private readonly forWriting: boolean,
    private readonly contents: CheckpointContents = new CheckpointContents(),
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

  private forget(position: BlobPosition, channel: string): void {
    const cacheKey = JSON.stringify([position.thread_id, position.checkpoint_ns, channel]);
    this.known.delete(cacheKey);
  }

  /**
   * The values stored under `keys` (channel → key). A cleared channel has no value; `missing`
   * lists the channels whose key is not stored at all.
   * @throws ChannelValueMissingError when a list version a stored version builds on is missing.
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
        // Kept: an earlier release's cleared channel (`EMPTY_TYPE`, no blob) may be named by a header of this format that copied it by version.
        else if (doc.type !== EMPTY_TYPE && doc.blob !== null) {
          const ref = checkpointRefs.blob(this.collection.collectionName, position, doc.channel, doc.version);
          values[doc.channel] = await this.serde.loadsTyped(doc.type, await this.contents.open(position.thread_id, ref, doc.blob));
        }
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
    const name = this.collection.collectionName;
    const stored = chain.flatMap((l) => (l.items ?? []).map((bytes, i) => ({ type: (l.item_types ?? [])[i] ?? "json", bytes })));
    const serialized = await Promise.all(
      stored.map(
        async ({ type, bytes }, index): Promise<SerializedItem> => ({
          type,
          bytes: await this.contents.open(position.thread_id, checkpointRefs.item(name, position, head.channel, index), bytes),
        }),
      ),
    );
    const items = await Promise.all(serialized.map(({ type, bytes }) => this.codec.load(type, bytes)));
    if (this.forWriting) this.codec.digests(items, serialized, await this.contents.digests(position.thread_id));
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
      if (!links.has(baseKey)) await this.fetch(position, head.channel, [baseKey, ...(link.chain ?? [])]);
      const base = links.get(baseKey);
      if (base === undefined) return `its base ${baseKey}`;
      if (chain.length > links.size) return `its base ${baseKey} (a cycle)`;
      link = base;
    }
    chain.push(link);
    return chain.reverse();
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
