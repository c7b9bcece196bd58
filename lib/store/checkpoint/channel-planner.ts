import type { ChannelVersions, SerializerProtocol } from "@langchain/langgraph-checkpoint";
import type { Collection } from "mongodb";
import { CheckpointNotFoundError } from "../../errors.js";
import type { BlobPosition } from "./blob-reader.js";
import type { ChannelBlobStore, ChannelWrite } from "./channel-blob-store.js";
import { checkpointRefs } from "./checkpoint-contents.js";
import {
  CLEAR_HEADERS,
  HEADER_FORMAT,
  decodeHeader,
  type CheckpointDocument,
  type DecodedHeader,
  type HeaderSeal,
  type InlineValue,
} from "./checkpoint-header.js";
import type { ReadContext } from "./checkpoint-reader.js";

/**
 * Serialized bytes up to which a channel value is kept in its checkpoint's header instead of a
 * blob document: the graph's small bookkeeping channels and short inputs cost no document.
 */
export const DEFAULT_INLINE_VALUE_BYTES = 4 * 1024;

/** Where the channels of a new checkpoint are: blobs to write, blob keys, values in the header, channels without a value. */
export interface ChannelPlan {
  writes: ChannelWrite[];
  keys: Map<string, string>;
  inline: Map<string, InlineValue>;
  absent: string[];
}

/**
 * Decides, for a `put`, where each channel value of the new checkpoint goes: written anew (as
 * list links, inline in the header or as a blob), named as its parent names it, or found where
 * another header of the thread keeps it. It reads; the saver writes what it plans.
 */
export class ChannelPlanner {
  constructor(
    private readonly checkpoints: Collection<CheckpointDocument>,
    private readonly blobs: ChannelBlobStore,
    private readonly serde: SerializerProtocol,
    /** How headers are sealed. Default: clear. */
    private readonly seal: HeaderSeal = CLEAR_HEADERS,
  ) {}

  /** The visible parent header; anything else is a run from a checkpoint that no longer exists. */
  async parentOf(
    position: BlobPosition,
    checkpointId: string,
    doc: CheckpointDocument | null,
    read: ReadContext,
  ): Promise<{ id: string; header: DecodedHeader }> {
    if (doc === null || !(await read.visible(doc))) {
      throw new CheckpointNotFoundError(
        `checkpoint ${checkpointId} of thread ${position.thread_id} does not exist (pruned, deleted or never written); nothing was written`,
        position.thread_id,
        position.checkpoint_ns,
        checkpointId,
      );
    }
    return { id: checkpointId, header: await decodeHeader(doc, this.serde, this.seal, { metadata: false }) };
  }

  /**
   * Where each versioned channel's value goes. A channel at a version in `newVersions` is
   * written: a list as links, a small value inline in the header, a larger one as a blob, none
   * when the channel has no value. A channel at the version its parent (of this format) has
   * names what the parent names. One at the version of a legacy parent is written again from
   * `values` (a blob gets a key of its own: legacy versions may repeat across branches), and so
   * is one at a version a legacy header of the thread names, under a key of this checkpoint (a
   * copy of a stock checkpoint, see {@link namedByLegacy}). Any other names the blob stored under
   * its version if there is one, else what another header of this format names for that version
   * (see {@link namedElsewhere}), else no value.
   */
  async plan(
    position: BlobPosition,
    checkpointId: string,
    versions: ChannelVersions,
    newVersions: ChannelVersions,
    values: Record<string, unknown>,
    parent: { id: string; header: DecodedHeader } | undefined,
    read: ReadContext,
  ): Promise<ChannelPlan> {
    const plan: ChannelPlan = { writes: [], keys: new Map(), inline: new Map(), absent: [] };
    const parentFormat = parent?.header.format === HEADER_FORMAT ? parent.header : undefined;
    // A list extends the version its parent names, when that version is a list link.
    const bases = new Map<string, string>();
    const store = async (channel: string, key: string, referenced: boolean) => {
      if (!(channel in values)) {
        if (referenced) plan.absent.push(channel);
        return;
      }
      const value = values[channel];
      if (Array.isArray(value)) {
        const baseKey = parentFormat?.keys.get(channel);
        if (baseKey !== undefined) bases.set(channel, baseKey);
        plan.writes.push({ channel, key, list: value });
        if (referenced) plan.keys.set(channel, key);
        return;
      }
      const [type, bytes] = await this.serde.dumpsTyped(value);
      if (referenced && bytes.byteLength <= DEFAULT_INLINE_VALUE_BYTES) {
        // Bound to the channel's version in the header, which a child header that copies it has too.
        const ref = checkpointRefs.inline(this.seal.collection, position, channel, String(versions[channel]));
        plan.inline.set(channel, { type, blob: await this.seal.contents.seal(position.thread_id, ref, bytes) });
        return;
      }
      plan.writes.push({ channel, key, serialized: { type, bytes } });
      if (referenced) plan.keys.set(channel, key);
    };
    const unknown: [string, string][] = [];
    for (const [channel, version] of Object.entries(newVersions)) await store(channel, String(version), versions[channel] === version);
    for (const [channel, version] of Object.entries(versions)) {
      if (newVersions[channel] === version) continue;
      const inherited = parent?.header.checkpoint.channel_versions[channel] === version ? parent : undefined;
      if (inherited !== undefined && parentFormat !== undefined) {
        const inline = parentFormat.inline.get(channel);
        const key = parentFormat.keys.get(channel);
        if (inline !== undefined) plan.inline.set(channel, inline);
        else if (key !== undefined) plan.keys.set(channel, key);
        else plan.absent.push(channel);
      } else if (inherited !== undefined) {
        // Kept: the parent is a stock `MongoDBSaver` header (or an earlier release's, of its form).
        await store(channel, `${version}~${inherited.id}`, true);
      } else {
        unknown.push([channel, String(version)]);
      }
    }
    // Kept: continuing or copying a stock `MongoDBSaver` thread, whose integer versions repeat across branches.
    const legacy = await this.namedByLegacy(position, unknown, read);
    for (const [channel, key] of legacy) await store(channel, `${key}~${checkpointId}`, true);
    const byVersion = unknown.filter(([channel]) => !legacy.has(channel));
    const stored = await this.blobs.stored(position, byVersion);
    const elsewhere = await this.namedElsewhere(
      position,
      byVersion.filter(([channel, key]) => !stored.has(`${channel}\u0000${key}`)),
      read,
    );
    for (const [channel, key] of byVersion) {
      const named = elsewhere.get(channel);
      if (stored.has(`${channel}\u0000${key}`)) plan.keys.set(channel, key);
      else if (named?.inline !== undefined) plan.inline.set(channel, named.inline);
      else if (named?.key !== undefined) plan.keys.set(channel, named.key);
      else plan.absent.push(channel);
    }
    const heads = await this.blobs.listHeads(position, bases);
    for (const w of plan.writes) if ("list" in w) w.base = heads.get(w.channel);
    return plan;
  }

  /**
   * Which of the wanted channels are at an integer version that a legacy header (stock
   * `MongoDBSaver`'s) of the thread names. Stock counts versions up from the same numbers on
   * every branch, so such a version does not say which value it is: a copy of a stock checkpoint
   * writes its values again rather than take another branch's (or none) by version. Versions
   * this saver makes are never integers (see {@link getNextVersion}), so only copies of legacy
   * checkpoints pay for this read.
   */
  private async namedByLegacy(position: BlobPosition, wanted: [string, string][], read: ReadContext): Promise<Map<string, string>> {
    const found = new Map<string, string>();
    const pending = new Map(wanted.filter(([, key]) => Number.isInteger(Number(key))));
    if (pending.size === 0) return found;
    for await (const doc of this.checkpoints.find({ ...position, format: { $ne: HEADER_FORMAT } })) {
      if (!(await read.visible(doc))) continue;
      const versions = (await decodeHeader(doc, this.serde, this.seal, { metadata: false })).checkpoint.channel_versions;
      for (const [channel, key] of pending) {
        if (String(versions[channel]) !== key) continue;
        pending.delete(channel);
        found.set(channel, key);
      }
      if (pending.size === 0) break;
    }
    return found;
  }

  /**
   * Where the visible headers of this format, newest first, keep each channel's value at the
   * given version: in the header, or under a blob key of its own. A put names a version neither
   * new nor its parent's when it copies a checkpoint (`updateState` as `__copy__` puts its source's
   * versions, none new, under the source's parent); a value kept in the source's header is found
   * only here. Versions are unique per writer (see {@link getNextVersion}), so any header naming
   * one holds its value.
   */
  private async namedElsewhere(
    position: BlobPosition,
    wanted: [string, string][],
    read: ReadContext,
  ): Promise<Map<string, { inline?: InlineValue; key?: string }>> {
    const found = new Map<string, { inline?: InlineValue; key?: string }>();
    const pending = new Map(wanted);
    if (pending.size === 0) return found;
    for await (const doc of this.checkpoints.find({ ...position, format: HEADER_FORMAT }).sort({ checkpoint_id: -1 })) {
      if (!(await read.visible(doc))) continue;
      const header = await decodeHeader(doc, this.serde, this.seal, { metadata: false });
      for (const [channel, key] of pending) {
        if (String(header.checkpoint.channel_versions[channel]) !== key) continue;
        pending.delete(channel);
        found.set(channel, { inline: header.inline.get(channel), key: header.keys.get(channel) });
      }
      if (pending.size === 0) break;
    }
    return found;
  }
}
