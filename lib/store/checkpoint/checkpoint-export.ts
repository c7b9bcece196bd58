import { type Checkpoint, JsonPlusSerializer } from "@langchain/langgraph-checkpoint";
import { Binary, type Document } from "mongodb";
import type { ContentCipher, FieldRef } from "../../crypto/content-cipher.js";
import { COLLECTIONS } from "../collections.js";
import type { BlobPosition } from "./blob-reader.js";
import { CheckpointContents, checkpointRefs } from "./checkpoint-contents.js";
import { HEADER_FORMAT, HEADER_TYPE_PREFIX } from "./checkpoint-header.js";

const serde = new JsonPlusSerializer();

/** Whether `collection` is one of the checkpointer's, whose values {@link openedCheckpointDocument} opens. */
export function isCheckpointCollection(collection: string): boolean {
  return collection === COLLECTIONS.checkpoints || collection === COLLECTIONS.checkpointWrites || collection === COLLECTIONS.checkpointBlobs;
}

/**
 * A document of the checkpointer's collections (default names) with every sealed value opened into
 * the serialized bytes it holds (BSON binary, subtype 0): what an export carries, and what set-up
 * of the database it is imported into seals again. Digests stay as stored (keyed hashes, which
 * reveal nothing without the tenant's key; after an import under other keys the first put of each
 * list stores it whole once). A value that will not open stops the export (`ContentRefusedError`).
 */
export async function openedCheckpointDocument(collection: string, doc: Document, cipher: ContentCipher): Promise<Document> {
  if (!cipher.enabled) return doc;
  const contents = new CheckpointContents({
    cipher,
    digestKeyOf: () => Promise.reject(new Error("an export opens values and makes no digests")),
  });
  const thread: string = doc.thread_id;
  const position: BlobPosition = { thread_id: thread, checkpoint_ns: doc.checkpoint_ns };
  const clear = async (ref: FieldRef, stored: unknown) => (stored instanceof Binary ? new Binary(await contents.openAny(thread, ref, stored)) : stored);
  const out: Document = { ...doc };
  if (collection === COLLECTIONS.checkpoints) {
    for (const field of ["checkpoint", "metadata"] as const) {
      out[field] = await clear(checkpointRefs.header(collection, position, doc.checkpoint_id, field), doc[field]);
    }
    const inline = Object.entries((doc.inline_values ?? {}) as Record<string, { type: string; blob: Binary }>);
    if (inline.length > 0) {
      const type = doc.format === HEADER_FORMAT ? String(doc.type).slice(HEADER_TYPE_PREFIX.length) : doc.type;
      const versions = ((await serde.loadsTyped(type, (out.checkpoint as Binary).buffer)) as Checkpoint).channel_versions;
      const opened: Record<string, { type: string; blob: unknown }> = {};
      for (const [channel, value] of inline) {
        opened[channel] = { ...value, blob: await clear(checkpointRefs.inline(collection, position, channel, String(versions[channel])), value.blob) };
      }
      out.inline_values = opened;
    }
  } else if (collection === COLLECTIONS.checkpointWrites) {
    out.value = await clear(checkpointRefs.write(collection, position, doc.checkpoint_id, doc.task_id, doc.idx), doc.value);
  } else if (collection === COLLECTIONS.checkpointBlobs) {
    if (doc.blob instanceof Binary) out.blob = await clear(checkpointRefs.blob(collection, position, doc.channel, doc.version), doc.blob);
    if (Array.isArray(doc.items)) {
      const first = (doc.count ?? doc.items.length) - doc.items.length;
      out.items = await Promise.all((doc.items as unknown[]).map((item, i) => clear(checkpointRefs.item(collection, position, doc.channel, first + i), item)));
    }
  }
  return out;
}
