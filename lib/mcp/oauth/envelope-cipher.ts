import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import type { DataKeySource } from "./data-key-source.js";

/** A value as stored: its data key encrypted by the key source, and AES-256-GCM's nonce, tag and ciphertext (base64). */
export interface Sealed {
  v: 1;
  key: string;
  iv: string;
  tag: string;
  data: string;
}

/** Decrypted data keys a container keeps, so a tool call does not cost a KMS call each time. Default below. */
export const DEFAULT_DATA_KEY_CACHE_SIZE = 256;

/**
 * Envelope encryption with AES-256-GCM (node:crypto): each value gets a new data key from the
 * source, stored encrypted beside it. The associated data (who and which server a token is for)
 * is authenticated: a value moved to another user's record does not decrypt.
 */
export class EnvelopeCipher {
  readonly #source: DataKeySource;
  readonly #keys = new Map<string, Buffer>();
  readonly #cacheSize: number;

  /** @param cacheSize Decrypted data keys kept in memory. Default: {@link DEFAULT_DATA_KEY_CACHE_SIZE}. */
  constructor(source: DataKeySource, cacheSize?: number) {
    this.#source = source;
    this.#cacheSize = cacheSize ?? DEFAULT_DATA_KEY_CACHE_SIZE;
  }

  async seal(plaintext: string, associatedData: string): Promise<Sealed> {
    const key = await this.#source.generate();
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", key.plaintext, iv);
    cipher.setAAD(Buffer.from(associatedData, "utf8"));
    const data = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
    const sealed: Sealed = {
      v: 1,
      key: key.encrypted.toString("base64"),
      iv: iv.toString("base64"),
      tag: cipher.getAuthTag().toString("base64"),
      data: data.toString("base64"),
    };
    this.#remember(sealed.key, key.plaintext);
    return sealed;
  }

  /** Throws when the value was not sealed with this associated data, or was changed. */
  async open(sealed: Sealed, associatedData: string): Promise<string> {
    const key = this.#keys.get(sealed.key) ?? (await this.#source.decrypt(Buffer.from(sealed.key, "base64")));
    this.#remember(sealed.key, key);
    const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(sealed.iv, "base64"));
    decipher.setAAD(Buffer.from(associatedData, "utf8"));
    decipher.setAuthTag(Buffer.from(sealed.tag, "base64"));
    return Buffer.concat([decipher.update(Buffer.from(sealed.data, "base64")), decipher.final()]).toString("utf8");
  }

  #remember(encrypted: string, key: Buffer): void {
    this.#keys.delete(encrypted);
    this.#keys.set(encrypted, key);
    if (this.#keys.size > this.#cacheSize) this.#keys.delete(this.#keys.keys().next().value as string);
  }
}
