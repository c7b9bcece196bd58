import { createHmac, randomBytes } from "node:crypto";
import type { Collection } from "mongodb";
import type { ContentCipher, FieldRef } from "./content-cipher.js";
import { type TenantRef, tenantKey } from "./tenant-keys.js";

/** Characters of a term's keyed hash kept (base64url of HMAC-SHA256): 96 bits, so two terms of a conversation never share one. */
export const TERM_HASH_CHARS = 16;

/** A tenant's term key as stored: 32 random bytes, sealed under the tenant's content keys. */
export interface TermKeyDocument {
  /** `tenantKey(tenant)`. */
  _id: string;
  key: unknown;
  createdAt: Date;
}

/**
 * Per-tenant keys for the recall index's terms (docs/security.md, "Recall over encrypted contents"):
 * a term is stored as its HMAC-SHA256 under the tenant's term key, so search still ranks by equal
 * terms while the index holds no word in clear. The term key is random, made on first use and
 * stored sealed by the tenant's content keys: shredding those makes every copy of it unreadable,
 * and with it the link from hashes to words.
 */
export class TenantTermKeys {
  readonly #keys: Collection<TermKeyDocument>;
  readonly #cipher: ContentCipher;
  readonly #hashers = new Map<string, Promise<(term: string) => string>>();

  constructor(keys: Collection<TermKeyDocument>, cipher: ContentCipher) {
    this.#keys = keys;
    this.#cipher = cipher;
  }

  /** The tenant's term hasher, its key read (or made) once per process. */
  hasherOf(tenant: TenantRef): Promise<(term: string) => string> {
    const id = tenantKey(tenant);
    let hasher = this.#hashers.get(id);
    if (!hasher) {
      hasher = this.#load(tenant, id);
      hasher.catch(() => this.#hashers.delete(id));
      this.#hashers.set(id, hasher);
    }
    return hasher;
  }

  /** Forgets the tenant's key in this process (after a shred). */
  forget(tenant: TenantRef): void {
    this.#hashers.delete(tenantKey(tenant));
  }

  async #load(tenant: TenantRef, id: string): Promise<(term: string) => string> {
    const ref: FieldRef = { collection: this.#keys.collectionName, id, field: "key" };
    let doc = await this.#keys.findOne({ _id: id });
    if (!doc) {
      const key = await this.#cipher.sealJsonFor(tenant, ref, randomBytes(32).toString("base64"));
      // Two processes may make one at once: the first stored wins, and both read it.
      await this.#keys.updateOne({ _id: id }, { $setOnInsert: { key, createdAt: new Date() } }, { upsert: true });
      doc = await this.#keys.findOne({ _id: id });
      if (!doc) throw new Error(`the term key of ${id} was not stored`);
    }
    const key = Buffer.from(await this.#cipher.openJsonFor<string>(tenant, ref, doc.key), "base64");
    return (term) => createHmac("sha256", key).update(term, "utf8").digest("base64url").slice(0, TERM_HASH_CHARS);
  }
}
