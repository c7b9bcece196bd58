import type { Checkpoint, SerializerProtocol } from "@langchain/langgraph-checkpoint";
import type { Binary, Collection, Document, Filter, WithId } from "mongodb";
import type { FieldRef } from "../../crypto/content-cipher.js";
import { NotFoundError } from "../../errors.js";
import { type BlobDocument, type BlobPosition, LIST_TYPE } from "./blob-reader.js";
import { type CheckpointContents, checkpointRefs, KEYED_DIGEST_PREFIX } from "./checkpoint-contents.js";
import { HEADER_FORMAT, HEADER_TYPE_PREFIX, type CheckpointDocument } from "./checkpoint-header.js";
import type { WriteDocument } from "./checkpoint-reader.js";
import { EMPTY_LIST_DIGEST } from "./list-links.js";

/** A stored value the walk met: where it is (as its ciphertext is bound) and its thread. */
export type StoredValue = FieldRef & { threadId: string };

/**
 * Whether a stored value is to be sealed again: for set-up, `(stored) => !isCiphertext(stored)`
 * (what is clear); for a key rotation, whether the key that sealed it is an old one.
 */
export type NeedsReseal = (stored: Binary, where: StoredValue) => boolean;

/** What {@link CheckpointResealer.reseal} did. */
export interface CheckpointReseal {
  /** Values sealed again (clear ones sealed for the first time). */
  resealed: number;
  /** Documents rewritten (values resealed, digests keyed, `metadata_search` narrowed). */
  documents: number;
  /** Documents (a list channel's links counting as one) left as they were: their thread belongs to no conversation (retention removes them). */
  orphaned: number;
  /** Documents changed by a writer or a prune since they were read, left for the next run. */
  changed: number;
}

export interface CheckpointResealerOptions {
  checkpoints: Collection<CheckpointDocument>;
  writes: Collection<WriteDocument>;
  blobs: Collection<BlobDocument>;
  contents: CheckpointContents;
  serde: SerializerProtocol;
  /** `metadata_search` as the saver writes it from the metadata (see `ThreadwiseSaver`). */
  searchable: (search: Record<string, unknown>) => Record<string, unknown>;
  /** Called for each list version rewritten, whose remembered head is then stale. */
  onRelinked: (position: BlobPosition, channel: string, version: string) => void;
}

const isKeyed = (digest: string | undefined) => digest === undefined || digest === EMPTY_LIST_DIGEST || digest.startsWith(KEYED_DIGEST_PREFIX);

/**
 * The walk over every stored checkpoint value (headers, inline values, pending writes, blobs,
 * list items) that seals again what a predicate selects: the encryption of a database written
 * clear (set-up), and the re-encryption of a rotated key. List digests and value digests stored
 * as plain SHA-256 are made again under the tenant's digest key (a link's digest chains on its
 * base's, so a channel's links are walked bases first). Each document is replaced only if it is
 * unchanged since it was read (a prune's merge meanwhile leaves it for the next run).
 */
export class CheckpointResealer {
  constructor(private readonly options: CheckpointResealerOptions) {}

  async reseal(needsReseal: NeedsReseal, options: { threadId?: string } = {}): Promise<CheckpointReseal> {
    const result: CheckpointReseal = { resealed: 0, documents: 0, orphaned: 0, changed: 0 };
    if (!this.options.contents.enabled) return result;
    const walk = new Walk(this.options, needsReseal, result);
    const filter = options.threadId === undefined ? {} : { thread_id: options.threadId };
    for await (const doc of this.options.checkpoints.find(filter)) await walk.orphanable(doc.thread_id, () => walk.header(doc));
    for await (const doc of this.options.writes.find(filter)) await walk.orphanable(doc.thread_id, () => walk.write(doc));
    for await (const doc of this.options.blobs.find({ ...filter, type: { $ne: LIST_TYPE }, blob: { $ne: null } })) {
      await walk.orphanable(doc.thread_id, () => walk.blob(doc));
    }
    const channels = new Map<string, BlobPosition & { channel: string }>();
    for await (const doc of this.options.blobs.find({ ...filter, type: LIST_TYPE }, { projection: { thread_id: 1, checkpoint_ns: 1, channel: 1 } })) {
      channels.set(JSON.stringify([doc.thread_id, doc.checkpoint_ns, doc.channel]), {
        thread_id: doc.thread_id,
        checkpoint_ns: doc.checkpoint_ns,
        channel: doc.channel,
      });
    }
    for (const { channel, ...position } of channels.values()) await walk.orphanable(position.thread_id, () => walk.list(position, channel));
    return result;
  }
}

/** One run of the walk: its predicate, its counts and the threads found without a conversation. */
class Walk {
  private readonly orphans = new Set<string>();

  constructor(
    private readonly options: CheckpointResealerOptions,
    private readonly needsReseal: NeedsReseal,
    private readonly result: CheckpointReseal,
  ) {}

  /** Runs `step` (which returns the documents it covers) unless the thread belongs to no conversation, counted then. */
  async orphanable(threadId: string, step: () => Promise<number>): Promise<void> {
    if (this.orphans.has(threadId)) {
      this.result.orphaned += 1;
      return;
    }
    try {
      await step();
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
      this.orphans.add(threadId);
      this.result.orphaned += 1;
    }
  }

  /** The value sealed anew if the predicate selects it, else undefined. */
  private async again(threadId: string, ref: FieldRef, stored: Binary): Promise<Binary | undefined> {
    if (!this.needsReseal(stored, { ...ref, threadId })) return undefined;
    const { contents } = this.options;
    const sealed = await contents.seal(threadId, ref, await contents.openAny(threadId, ref, stored));
    this.result.resealed += 1;
    return sealed;
  }

  private async commit<T extends Document>(collection: Collection<T>, filter: Filter<T>, set: Record<string, unknown>): Promise<number> {
    if (Object.keys(set).length === 0) return 1;
    const { modifiedCount } = await collection.updateOne(filter, { $set: set as Partial<T> });
    if (modifiedCount === 1) this.result.documents += 1;
    else this.result.changed += 1;
    return 1;
  }

  async header(doc: WithId<CheckpointDocument>): Promise<number> {
    const { checkpoints, contents, serde } = this.options;
    const name = checkpoints.collectionName;
    const set: Record<string, unknown> = {};
    const current = doc.format === HEADER_FORMAT;
    const type = current ? doc.type.slice(HEADER_TYPE_PREFIX.length) : doc.type;
    // A header of this format holds versions only, stored clear; a legacy one (stock's) holds the values.
    const fields = current ? (["metadata"] as const) : (["checkpoint", "metadata"] as const);
    for (const field of fields) {
      const sealed = await this.again(doc.thread_id, checkpointRefs.header(name, doc, doc.checkpoint_id, field), doc[field]);
      if (sealed !== undefined) set[field] = sealed;
    }
    const inline = Object.entries(doc.inline_values ?? {});
    if (inline.length > 0) {
      const checkpointRef = checkpointRefs.header(name, doc, doc.checkpoint_id, "checkpoint");
      const versions = ((await serde.loadsTyped(type, await contents.openAny(doc.thread_id, checkpointRef, doc.checkpoint))) as Checkpoint).channel_versions;
      for (const [channel, value] of inline) {
        const sealed = await this.again(doc.thread_id, checkpointRefs.inline(name, doc, channel, String(versions[channel])), value.blob);
        if (sealed !== undefined) set[`inline_values.${channel}.blob`] = sealed;
      }
    }
    // What `metadata_search` keeps clear, from the metadata itself (stock wrote the whole of it there, or nothing).
    const metadataRef = checkpointRefs.header(name, doc, doc.checkpoint_id, "metadata");
    const metadata = (await serde.loadsTyped(type, await contents.openAny(doc.thread_id, metadataRef, doc.metadata))) as Record<string, unknown>;
    const narrowed = this.options.searchable(metadata);
    if (JSON.stringify(narrowed) !== JSON.stringify(doc.metadata_search ?? {})) set.metadata_search = narrowed;
    return this.commit(checkpoints, { _id: doc._id }, set);
  }

  async write(doc: WithId<WriteDocument>): Promise<number> {
    const { writes } = this.options;
    const ref = checkpointRefs.write(writes.collectionName, doc, doc.checkpoint_id, doc.task_id, doc.idx);
    const sealed = await this.again(doc.thread_id, ref, doc.value);
    return this.commit(writes, { _id: doc._id }, sealed === undefined ? {} : { value: sealed });
  }

  async blob(doc: WithId<BlobDocument>): Promise<number> {
    const { blobs, contents } = this.options;
    if (doc.blob === null) return 1;
    const ref = checkpointRefs.blob(blobs.collectionName, doc, doc.channel, doc.version);
    const set: Record<string, unknown> = {};
    const sealed = await this.again(doc.thread_id, ref, doc.blob);
    if (sealed !== undefined) set.blob = sealed;
    // Documents of earlier releases have no `content`: nothing to key.
    if (doc.content !== undefined && !isKeyed(doc.content)) {
      const bytes = await contents.openAny(doc.thread_id, ref, doc.blob);
      set.content = (await contents.digests(doc.thread_id)).value({ type: doc.type, bytes });
    }
    return this.commit(blobs, { _id: doc._id, ...(doc.content === undefined ? {} : { content: doc.content }) } as Filter<BlobDocument>, set);
  }

  /**
   * The links of one list channel, bases first: each item the predicate selects sealed again (it
   * stays bound to its position in the list), and each digest not keyed, or chained on a base
   * whose digest changed, made again from the base's digest and the link's items.
   */
  async list(position: BlobPosition, channel: string): Promise<number> {
    const { blobs, contents } = this.options;
    const name = blobs.collectionName;
    const links = await blobs.find({ ...position, channel, type: LIST_TYPE }).toArray();
    const byKey = new Map(links.map((link) => [link.version, link]));
    const digests = await contents.digests(position.thread_id);
    const done = new Map<string, { digest: string | undefined; changed: boolean }>();
    const visit = async (link: WithId<BlobDocument>, depth: number): Promise<{ digest: string | undefined; changed: boolean }> => {
      const known = done.get(link.version);
      if (known !== undefined) return known;
      const base = link.base === undefined ? undefined : byKey.get(link.base);
      // A cycle or a missing base: left as it is (a reader fails on it loudly).
      const below = base === undefined || depth > links.length ? undefined : await visit(base, depth + 1);
      const items = link.items ?? [];
      const first = (link.count ?? items.length) - items.length;
      const refOf = (i: number) => checkpointRefs.item(name, position, channel, first + i);
      const stored = await Promise.all(items.map(async (item, i) => (await this.again(position.thread_id, refOf(i), item)) ?? item));
      const resealed = stored.some((item, i) => item !== items[i]);
      let digest = link.digest;
      const baseKnown = link.base === undefined || below !== undefined;
      if (baseKnown && (below?.changed === true || !isKeyed(link.digest))) {
        digest = below?.digest ?? EMPTY_LIST_DIGEST;
        for (const [i, item] of items.entries()) {
          const bytes = await contents.openAny(position.thread_id, refOf(i), item);
          digest = digests.next(digest, { type: (link.item_types ?? [])[i] ?? "json", bytes });
        }
      }
      const outcome = { digest, changed: digest !== link.digest };
      done.set(link.version, outcome);
      if (!resealed && !outcome.changed) return outcome;
      const set: Record<string, unknown> = { items: stored, bytes: stored.reduce((sum, item) => sum + item.position, 0) };
      if (outcome.changed) Object.assign(set, { digest, content: `${digest}:${link.count}` });
      const unchanged = { _id: link._id, digest: link.digest, ...(link.base === undefined ? { base: { $exists: false } } : { base: link.base }) };
      await this.commit(blobs, unchanged as Filter<BlobDocument>, set);
      this.options.onRelinked(position, channel, link.version);
      return outcome;
    };
    for (const link of links) await visit(link, 0);
    return links.length;
  }
}
