import type { Checkpoint, CheckpointMetadata, SerializerProtocol } from "@langchain/langgraph-checkpoint";
import type { Binary } from "mongodb";
import { COLLECTIONS } from "../collections.js";
import { CheckpointContents, checkpointRefs } from "./checkpoint-contents.js";
import type { FenceStamp } from "./thread-fences.js";

/**
 * Format of the checkpoint headers this saver writes. Headers without a format were written by
 * stock `MongoDBSaver` (channel values inline) or by Threadwise releases before it (values in
 * `checkpoint_blobs` under the version itself, lists in chunks).
 */
export const HEADER_FORMAT = 2;

/**
 * Prefixed to the serializer's type in headers of {@link HEADER_FORMAT}, so that stock
 * `MongoDBSaver` refuses to load them ("Unknown serialization type") rather than reading a
 * checkpoint without its channel values as an empty state.
 */
export const HEADER_TYPE_PREFIX = "threadwise+";

/** One document of `checkpoints`: a checkpoint without its channel values. */
export interface CheckpointDocument extends FenceStamp {
  thread_id: string;
  checkpoint_ns: string;
  checkpoint_id: string;
  parent_checkpoint_id?: string;
  type: string;
  checkpoint: Binary;
  metadata: Binary;
  metadata_search: CheckpointMetadata;
  format?: number;
  /** Channel → blob key, for channels whose value is not stored under the version itself. */
  blob_keys?: Record<string, string>;
  /** Small channel values, kept in the header rather than in a blob document of their own. */
  inline_values?: Record<string, InlineValue>;
  /** Versioned channels without a value: cleared, or the writer had none to store. */
  absent?: string[];
  upserted_at?: Date;
  expiresAt?: Date;
}

/** A serialized channel value kept in its checkpoint's header (sealed when encryption is on, see `checkpointRefs.inline`). */
export interface InlineValue {
  type: string;
  blob: Binary;
}

/** How a header's serialized fields are opened: the saver's contents and the headers' collection. */
export interface HeaderSeal {
  contents: CheckpointContents;
  collection: string;
}

/** Headers stored clear (encryption off). */
export const CLEAR_HEADERS: HeaderSeal = { contents: new CheckpointContents(), collection: COLLECTIONS.checkpoints };

/** A header as read back, with where each channel's value is stored. */
export interface DecodedHeader {
  checkpoint: Checkpoint;
  metadata: CheckpointMetadata;
  /** {@link HEADER_FORMAT}, or 0 for a legacy header. */
  format: number;
  /** Channel → blob key, for every versioned channel stored in `checkpoint_blobs`. */
  keys: Map<string, string>;
  inline: Map<string, InlineValue>;
  absent: Set<string>;
}

/**
 * A header as read back. A header of this format holds versions only (its values are in blobs and
 * inline values), stored clear; a legacy header (stock `MongoDBSaver`'s, read to interoperate, or an
 * earlier release's) holds its values in `checkpoint`, sealed when encryption is on, so with
 * encryption on a clear one is refused until set-up seals it. `metadata` is sealed when encryption
 * is on; with `metadata: false` and encryption on, what `metadata_search` keeps clear stands for it
 * (LangGraph's bookkeeping, what the pruner reads), and nothing is decrypted. Inline values stay as
 * stored, and are opened where they are read.
 * @throws ContentRefusedError when a field is clear where ciphertext is expected, or was sealed for another place.
 */
export async function decodeHeader(
  doc: CheckpointDocument,
  serde: SerializerProtocol,
  seal: HeaderSeal = CLEAR_HEADERS,
  options: { metadata?: boolean } = {},
): Promise<DecodedHeader> {
  // Kept: a header without a format is stock `MongoDBSaver`'s (read to interoperate with LangGraph's own saver), or of earlier releases, which has its shape.
  const current = doc.format === HEADER_FORMAT;
  const type = current && doc.type.startsWith(HEADER_TYPE_PREFIX) ? doc.type.slice(HEADER_TYPE_PREFIX.length) : doc.type;
  const open = (field: "checkpoint" | "metadata") =>
    seal.contents.open(doc.thread_id, checkpointRefs.header(seal.collection, doc, doc.checkpoint_id, field), doc[field]);
  const withMetadata = options.metadata !== false || !seal.contents.enabled;
  const [checkpointBytes, metadataBytes] = await Promise.all([
    current && !seal.contents.isSealed(doc.checkpoint) ? doc.checkpoint.buffer.subarray(0, doc.checkpoint.position) : open("checkpoint"),
    withMetadata ? open("metadata") : undefined,
  ]);
  const [checkpoint, metadata] = (await Promise.all([
    serde.loadsTyped(type, checkpointBytes),
    metadataBytes === undefined ? (doc.metadata_search ?? {}) : serde.loadsTyped(type, metadataBytes),
  ])) as [Checkpoint, CheckpointMetadata];
  const inline = new Map(Object.entries(doc.inline_values ?? {}));
  const absent = new Set(doc.absent ?? []);
  const keys = new Map(
    Object.entries(checkpoint.channel_versions ?? {})
      .filter(([channel]) => !inline.has(channel) && !absent.has(channel))
      .map(([channel, version]) => [channel, doc.blob_keys?.[channel] ?? String(version)]),
  );
  return { checkpoint, metadata, format: current ? HEADER_FORMAT : 0, keys, inline, absent };
}
