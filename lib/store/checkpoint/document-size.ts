import { BSON, type Document } from "mongodb";
import { DocumentTooLargeError } from "../../errors.js";

/** MongoDB refuses any document above this size; our own limit must stay below it. */
export const MONGODB_MAX_DOCUMENT_BYTES = 16 * 1024 * 1024;

/**
 * Largest document the checkpointer writes, in BSON bytes. Far below MongoDB's 16 MB so that a
 * thread that grows past it fails loudly, early and with room to spare, instead of at the hard
 * limit in the middle of a turn.
 */
export const DEFAULT_MAX_DOCUMENT_BYTES = 4 * 1024 * 1024;

/**
 * Throws {@link DocumentTooLargeError} when `document` would exceed `limit` BSON bytes.
 * Measured before anything is written, so a refused write leaves nothing behind.
 */
export function assertDocumentFits(document: Document, limit: number, what: string): number {
  const bytes = BSON.calculateObjectSize(document);
  if (bytes > limit) {
    throw new DocumentTooLargeError(`${what} would be ${bytes} bytes, above the limit of ${limit} bytes; large tool outputs belong in artifacts`, bytes, limit);
  }
  return bytes;
}
