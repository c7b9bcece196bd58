import { createHash, createHmac } from "node:crypto";
import { Binary } from "mongodb";
import { CLEAR_FIELDS } from "../../crypto/clear-field-cipher.js";
import type { ContentCipher, FieldRef } from "../../crypto/content-cipher.js";
import { ByteBoundedMap } from "../../byte-bounded-map.js";
import { NotFoundError } from "../../errors.js";
import { nextDigest, type SerializedItem } from "./list-links.js";

/** Marks a digest made with a tenant's key (see {@link Digests}); a digest without it is a plain SHA-256, as releases before issue 44 stored. */
export const KEYED_DIGEST_PREFIX = "h1:";
/** Digest keys (one per tenant) a process keeps, least recently used forgotten first. */
const DIGESTS_KEPT = 1_000;
/**
 * Bytes of opened values a process keeps, by ciphertext and place (least recently used forgotten
 * first, none kept longer than the cipher keeps a data key, so a shred's receipt holds for them too):
 * a turn reads back the messages the turns before it wrote, and decrypting each again costs a
 * millisecond or more.
 */
export const DEFAULT_OPENED_VALUE_BYTES = 16 * 1024 * 1024;

/**
 * Milliseconds an opened value is kept: as long as `FieldCipher` keeps a data key by default
 * (`DEFAULT_DATA_KEY_MAX_AGE_MS`; not imported, so that a bundle without the Encryption SDK stays without it).
 */
export const DEFAULT_OPENED_VALUE_MAX_AGE_MS = 300_000;

interface Opened {
  bytes: Uint8Array;
  at: number;
}

/**
 * How the checkpointer identifies list prefixes and values without storing them: `next` chains the
 * digest of a list (see `planLinks`), `value` identifies a serialized value (a blob's `content`, so
 * that writing the same version twice with the same value is a no-op). With encryption off, plain
 * SHA-256 as before; with encryption on, HMAC-SHA256 under a key of the thread's tenant, so that no
 * digest confirms a guess of a clear value.
 */
export interface Digests {
  readonly keyed: boolean;
  next(previous: string, item: SerializedItem): string;
  value(item: SerializedItem): string;
}

/** The digests stored with encryption off (and by releases before issue 44). */
export const CLEAR_DIGESTS: Digests = {
  keyed: false,
  next: nextDigest,
  value: ({ type, bytes }) => createHash("sha256").update(type).update("\0").update(bytes).digest("hex"),
};

function keyedDigests(key: Uint8Array): Digests {
  const mac = (label: string) => createHmac("sha256", key).update(label).update("\0");
  return {
    keyed: true,
    next: (previous, { type, bytes }) => `${KEYED_DIGEST_PREFIX}${mac("list").update(previous).update(type).update("\0").update(bytes).digest("hex")}`,
    value: ({ type, bytes }) => `${KEYED_DIGEST_PREFIX}${mac("value").update(type).update("\0").update(bytes).digest("hex")}`,
  };
}

export interface CheckpointContentsOptions {
  /** The database's cipher (docs/security.md, "Contents at rest"). Default: contents stored clear. */
  cipher?: ContentCipher;
  /**
   * The digest key of the thread's tenant, when the cipher is enabled (see {@link Digests}).
   * Default: none; required when `cipher.enabled`.
   */
  digestKeyOf?: (threadId: string) => Promise<Uint8Array>;
  /** Bytes of opened values kept in memory. Default: {@link DEFAULT_OPENED_VALUE_BYTES}; 0 keeps none. */
  openedValueBytes?: number;
  /** Milliseconds an opened value is kept: the cipher's data key age. Default: {@link DEFAULT_OPENED_VALUE_MAX_AGE_MS}. */
  openedValueMaxAgeMs?: number;
}

/**
 * Where the checkpointer seals and opens what it serializes (channel values, list items, pending
 * writes' values, checkpoint headers and metadata), keyed by the thread: a thread is a
 * conversation (its `thread_id` is the conversation id, for API, Agent Protocol and channel
 * threads alike, and a fork is a branch of the same thread), whose owner's tenant key seals it.
 * Each value is bound to where it is stored by its {@link FieldRef} (thread, namespace, channel,
 * version or position), so a ciphertext moved to another thread, channel or position is refused.
 * With encryption off, values are stored as the serializer wrote them (BSON binary, subtype 0),
 * exactly as before.
 */
export class CheckpointContents {
  readonly #cipher: ContentCipher;
  readonly #digestKeyOf: ((threadId: string) => Promise<Uint8Array>) | undefined;
  readonly #digests = new Map<string, Digests>();
  readonly #opened: ByteBoundedMap<string, Opened>;
  readonly #openedMaxAgeMs: number;

  constructor(options: CheckpointContentsOptions = {}) {
    this.#cipher = options.cipher ?? CLEAR_FIELDS;
    this.#digestKeyOf = options.digestKeyOf;
    this.#opened = new ByteBoundedMap(options.openedValueBytes ?? DEFAULT_OPENED_VALUE_BYTES, (key, value) => key.length * 2 + value.bytes.byteLength + 64);
    this.#openedMaxAgeMs = options.openedValueMaxAgeMs ?? DEFAULT_OPENED_VALUE_MAX_AGE_MS;
    if (this.#cipher.enabled && this.#digestKeyOf === undefined)
      throw new Error("an enabled cipher needs digestKeyOf: digests of clear values would reveal them");
  }

  /** False when contents are stored clear. */
  get enabled(): boolean {
    return this.#cipher.enabled;
  }

  /**
   * The value as stored: sealed under the thread's tenant key, or the serialized bytes themselves.
   * @throws NotFoundError when encryption is on and the thread belongs to no conversation (nothing is written).
   */
  async seal(threadId: string, ref: FieldRef, bytes: Uint8Array): Promise<Binary> {
    if (!this.enabled) return new Binary(bytes);
    const sealed = await this.#tenantBound(threadId, () => this.#cipher.sealBytes(threadId, ref, bytes));
    const stored = sealed instanceof Binary ? sealed : new Binary(sealed);
    this.#opened.set(this.#openedKey(ref, stored), { bytes: bytes.slice(), at: Date.now() });
    return stored;
  }

  /**
   * The serialized bytes of a stored value.
   * @throws ContentRefusedError when a clear value is stored where ciphertext is expected (`plaintext`),
   *   the ciphertext was written for another place (`moved`) or tenant (`undecryptable`), or a
   *   ciphertext is read with encryption off (`encryption_off`).
   */
  async open(threadId: string, ref: FieldRef, stored: unknown): Promise<Uint8Array> {
    if (!this.enabled) {
      // Clear bytes as a view of the driver's buffer (`openBytes` would copy them); a ciphertext is refused there.
      if (stored instanceof Binary && !this.#cipher.isSealed(stored)) return stored.buffer.subarray(0, stored.position);
      return this.#cipher.openBytes(threadId, ref, stored);
    }
    if (!(stored instanceof Binary)) return this.#tenantBound(threadId, () => this.#cipher.openBytes(threadId, ref, stored));
    // Keyed by where it is too: a ciphertext moved elsewhere is decrypted, and refused.
    const key = this.#openedKey(ref, stored);
    const known = this.#opened.get(key);
    if (known !== undefined && Date.now() - known.at < this.#openedMaxAgeMs) return known.bytes;
    const bytes = await this.#tenantBound(threadId, () => this.#cipher.openBytes(threadId, ref, stored));
    this.#opened.set(key, { bytes, at: Date.now() });
    return bytes;
  }

  #openedKey(ref: FieldRef, stored: Binary): string {
    const digest = createHash("sha256").update(stored.buffer.subarray(0, stored.position)).digest("base64");
    return JSON.stringify([ref.collection, ref.id, ref.field, digest]);
  }

  /** The bytes of a stored value, clear or sealed: what the re-sealing walk reads (see `CheckpointResealer`). */
  async openAny(threadId: string, ref: FieldRef, stored: Binary): Promise<Uint8Array> {
    if (!this.#cipher.isSealed(stored)) return stored.buffer.subarray(0, stored.position);
    return this.#tenantBound(threadId, () => this.#cipher.openBytes(threadId, ref, stored));
  }

  /** Whether a stored value is a ciphertext. */
  isSealed(stored: unknown): boolean {
    return this.#cipher.isSealed(stored);
  }

  /** The digests of the thread's tenant (see {@link Digests}). */
  async digests(threadId: string): Promise<Digests> {
    if (!this.enabled || this.#digestKeyOf === undefined) return CLEAR_DIGESTS;
    const getKey = this.#digestKeyOf;
    const key = await this.#tenantBound(threadId, () => getKey(threadId));
    const id = Buffer.from(key).toString("hex");
    let digests = this.#digests.get(id);
    if (digests === undefined) digests = keyedDigests(key);
    this.#digests.delete(id);
    this.#digests.set(id, digests);
    if (this.#digests.size > DIGESTS_KEPT) this.#digests.delete(this.#digests.keys().next().value as string);
    return digests;
  }

  /** A thread without a conversation has no tenant whose key could seal it: said, never stored clear. */
  async #tenantBound<T>(threadId: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
      throw new NotFoundError(
        `thread ${threadId} belongs to no conversation: its checkpoint contents have no tenant key to be encrypted or read with, and nothing was written`,
        { cause: error },
      );
    }
  }
}

type Position = { thread_id: string; checkpoint_ns: string };
const idOf = (...parts: (string | number)[]) => JSON.stringify(parts);

/**
 * Where each sealed checkpoint value is stored, as its ciphertext is bound to it. A value that
 * moves between documents without changing (an inline value a child header copies from its
 * parent, list items prune merges into one link) is bound to what stays: its channel and version,
 * or its position in the list.
 */
export const checkpointRefs = {
  /** A header's `checkpoint` (its versions) or `metadata`. */
  header: (collection: string, p: Position, checkpointId: string, field: "checkpoint" | "metadata"): FieldRef => ({
    collection,
    id: idOf(p.thread_id, p.checkpoint_ns, checkpointId),
    field,
  }),
  /** A small channel value kept in a header, at the channel's version in that header. */
  inline: (collection: string, p: Position, channel: string, version: string): FieldRef => ({
    collection,
    id: idOf(p.thread_id, p.checkpoint_ns, channel, version),
    field: "inline_values",
  }),
  /** A channel value stored under its blob key. */
  blob: (collection: string, p: Position, channel: string, key: string): FieldRef => ({
    collection,
    id: idOf(p.thread_id, p.checkpoint_ns, channel, key),
    field: "blob",
  }),
  /** The item at `index` of a list channel (the message list), whichever link holds it. */
  item: (collection: string, p: Position, channel: string, index: number): FieldRef => ({
    collection,
    id: idOf(p.thread_id, p.checkpoint_ns, channel, index),
    field: "items",
  }),
  /** A pending write's value. */
  write: (collection: string, p: Position, checkpointId: string, taskId: string, idx: number): FieldRef => ({
    collection,
    id: idOf(p.thread_id, p.checkpoint_ns, checkpointId, taskId, idx),
    field: "value",
  }),
};
