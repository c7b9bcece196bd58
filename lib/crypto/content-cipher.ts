import { Binary } from "mongodb";
import { ContentRefusedError, type ContentRefusal } from "../errors.js";
import type { TenantRef } from "./tenant-keys.js";

/** Where a value is stored: its collection, its document's `_id` (or stable key) and its field. */
export interface FieldRef {
  collection: string;
  id: string;
  field: string;
}

/** A field's value in a document, by its name in a {@link FieldRef} (a dotted name is a field of an embedded document). */
export function fieldValue(doc: object, field: string): unknown {
  return field.split(".").reduce<unknown>((value, key) => (value && typeof value === "object" ? (value as Record<string, unknown>)[key] : undefined), doc);
}

/** The document with the field (named as {@link fieldValue} names it) set to `value`; the input is left as it is. */
export function withFieldValue<T extends object>(doc: T, field: string, value: unknown): T {
  const [head, ...rest] = field.split(".");
  const inner = rest.length === 0 ? value : withFieldValue(((doc as Record<string, unknown>)[head] ?? {}) as object, rest.join("."), value);
  return { ...doc, [head]: inner };
}

/** A content field as stored: an AWS Encryption SDK message (BSON binary), or clear text when encryption is off. */
export type StoredContent = string | Binary;

/**
 * What a store seals its content fields with and opens them with: `FieldCipher` (the AWS Encryption
 * SDK, per tenant) or `ClearFieldCipher` (encryption off, and the functions that carry no SDK: the
 * Slack and Teams webhooks). Stores depend on this interface only, so a bundle that never makes a
 * `FieldCipher` does not carry the SDK (docs/security.md, "Contents at rest").
 */
export interface ContentCipher {
  /** False when contents are stored clear. */
  readonly enabled: boolean;
  sealText(conversationId: string, ref: FieldRef, text: string): Promise<StoredContent>;
  openText(conversationId: string, ref: FieldRef, stored: unknown): Promise<string>;
  /** A JSON value sealed whole (its JSON text); with encryption off, the value itself, stored as it is. */
  sealJson<T>(conversationId: string, ref: FieldRef, value: T): Promise<T | Binary>;
  openJson<T>(conversationId: string, ref: FieldRef, stored: unknown): Promise<T>;
  sealBytes(conversationId: string, ref: FieldRef, bytes: Uint8Array): Promise<Uint8Array | Binary>;
  openBytes(conversationId: string, ref: FieldRef, stored: unknown): Promise<Uint8Array>;
  /** As `sealJson`, under a tenant named directly (records not tied to a conversation, such as a tenant's recall key). */
  sealJsonFor<T>(tenant: TenantRef, ref: FieldRef, value: T): Promise<T | Binary>;
  openJsonFor<T>(tenant: TenantRef, ref: FieldRef, stored: unknown): Promise<T>;
  /** Whether a stored value is a ciphertext of this cipher's form (what a migration leaves alone). */
  isSealed(stored: unknown): boolean;
  /**
   * The stored value sealed again under the tenant's current key, or undefined when nothing is to
   * be done: that key sealed it already, it is no ciphertext, or encryption is off. What
   * re-encryption after a rotation writes (docs/security.md, "Rotation").
   */
  reseal(conversationId: string, ref: FieldRef, stored: unknown): Promise<Binary | undefined>;
  /** As `reseal`, under a tenant named directly (as `sealJsonFor`). */
  resealFor(tenant: TenantRef, ref: FieldRef, stored: unknown): Promise<Binary | undefined>;
  /** The key the tenant's new values are sealed with, read again from the key source; undefined when encryption is off. */
  currentKey(tenant: TenantRef): Promise<string | undefined>;
  /**
   * Whether a stored value was sealed under another key than `key` (read from its message header, nothing
   * decrypted): what a walker that re-seals in bulk (the checkpoints') selects. False for anything that is no ciphertext.
   */
  sealedUnderOtherKey(stored: unknown, key: string): boolean;
}

/**
 * The BSON binary subtype a ciphertext is stored with (0x80, the first user-defined one): clear bytes
 * (a checkpoint's serialized values with encryption off) are subtype 0, so the two never pass for each other.
 */
export const CIPHERTEXT_SUBTYPE = 0x80;

/** An Encryption SDK message as stored. */
export function ciphertextOf(bytes: Uint8Array): Binary {
  return new Binary(bytes, CIPHERTEXT_SUBTYPE);
}

/** Whether a stored value is a ciphertext (binary of {@link CIPHERTEXT_SUBTYPE}; clear contents never are). */
export function isCiphertext(stored: unknown): stored is Binary {
  return stored instanceof Binary && stored.sub_type === CIPHERTEXT_SUBTYPE;
}

const WHY: Record<ContentRefusal, string> = {
  plaintext: "a clear value is stored where ciphertext is expected",
  moved: "the ciphertext was written for another document, field, collection or tenant",
  undecryptable: "no key of the conversation's tenant decrypts it (shredded, or another tenant's)",
  encryption_off: "it is encrypted and content encryption is off",
};

/** The refusal of a stored field, naming where it is and why; never its content. */
export function contentRefused(reason: ContentRefusal, ref: FieldRef, cause?: unknown): ContentRefusedError {
  return new ContentRefusedError(
    `${ref.collection}.${ref.field} of ${ref.id} refused: ${WHY[reason]}`,
    reason,
    ref.collection,
    ref.field,
    cause === undefined ? undefined : { cause },
  );
}
