import { getLocalCryptographicMaterialsCache, NodeCachingMaterialsManager } from "@aws-crypto/caching-materials-manager-node";
import { buildDecrypt, type MessageHeader } from "@aws-crypto/decrypt-node";
import { buildEncrypt } from "@aws-crypto/encrypt-node";
import { AlgorithmSuiteIdentifier, CommitmentPolicy, NodeAlgorithmSuite } from "@aws-crypto/material-management-node";
import { deserializeFactory } from "@aws-crypto/serialize";
import type { Binary } from "mongodb";
import { ContentEncryptionOffError } from "../errors.js";
import { CLEAR_FIELDS } from "./clear-field-cipher.js";
import { type ContentCipher, ciphertextOf, contentRefused as refused, type FieldRef, isCiphertext, type StoredContent } from "./content-cipher.js";
import { type ShredReceipt, type TenantCurrentKey, type TenantKeys, type TenantRef, tenantKey } from "./tenant-keys.js";

/** How long a data key (and a tenant's keyrings) is reused before KMS or the key file is asked again. */
export const DEFAULT_DATA_KEY_MAX_AGE_MS = 300_000;
/** Values one cached data key encrypts before a new one is made. */
export const DEFAULT_DATA_KEY_MAX_MESSAGES = 100_000;
/** Bytes one cached data key encrypts before a new one is made. */
export const DEFAULT_DATA_KEY_MAX_BYTES = 1024 ** 3;
/** Data keys (encrypt and decrypt materials) a process keeps; tenants' keyrings are bounded the same. */
export const DEFAULT_DATA_KEY_CACHE_ENTRIES = 1_000;
/** The algorithm suite: key commitment, no ECDSA signature (writers and readers are the same service; a signature costs a millisecond a value). */
export const CONTENT_SUITE = AlgorithmSuiteIdentifier.ALG_AES256_GCM_IV12_TAG16_HKDF_SHA512_COMMIT_KEY;
/** Encryption-context keys: the data key is bound to the tenant and the collection. */
export const CONTEXT_TENANT = "threadwise:tenant";
export const CONTEXT_COLLECTION = "threadwise:collection";

export interface FieldCipherOptions {
  /** Where tenants' keys are. Undefined: encryption is off (`CONTENT_ENCRYPTION=off`), values are stored clear. */
  keys?: TenantKeys;
  /** The tenant of a conversation (its owner's issuer and tenant), asked once per conversation and process. */
  tenantOf: (conversationId: string) => Promise<TenantRef>;
  /** Default: {@link DEFAULT_DATA_KEY_MAX_AGE_MS}. */
  maxAgeMs?: number;
  /** Default: {@link DEFAULT_DATA_KEY_MAX_MESSAGES}. */
  maxMessages?: number;
  /** Default: {@link DEFAULT_DATA_KEY_MAX_BYTES}. */
  maxBytes?: number;
  /** Default: {@link DEFAULT_DATA_KEY_CACHE_ENTRIES}. */
  cacheEntries?: number;
}

interface TenantMaterials {
  loadedAt: number;
  current: string;
  encrypt: NodeCachingMaterialsManager;
  decrypt: NodeCachingMaterialsManager;
}

// The AWS Encryption SDK's client (`buildClient` of `@aws-crypto/client-node`), from its own packages: the umbrella also
// bundles the hierarchical keyring's DynamoDB client, which is not used here.
const { encrypt } = buildEncrypt(CommitmentPolicy.REQUIRE_ENCRYPT_REQUIRE_DECRYPT);
const { decrypt } = buildDecrypt(CommitmentPolicy.REQUIRE_ENCRYPT_REQUIRE_DECRYPT);
// The SDK's own header parser (what decrypt reads first), to tell which key sealed a value without decrypting it.
const { deserializeMessageHeader } = deserializeFactory((bytes) => Buffer.from(bytes).toString("utf8"), NodeAlgorithmSuite);

/**
 * The one place a content field is encrypted or decrypted (docs/security.md, "Contents at rest").
 * Envelope encryption with the AWS Encryption SDK: a data key per tenant and collection, cached
 * (bounded by age, values and bytes) so a turn asks KMS nothing once warm, wrapped by the tenant's
 * key. The encryption context names the tenant and the collection; the document id and field are
 * authenticated inside the message and checked on read, so a ciphertext moved to another row,
 * field, collection or tenant is refused. A clear value where ciphertext is expected is refused too.
 */
export class FieldCipher implements ContentCipher {
  readonly #keys: TenantKeys | undefined;
  readonly #tenantOf: (conversationId: string) => Promise<TenantRef>;
  readonly #tenants = new Map<string, Promise<TenantRef>>();
  readonly #materials = new Map<string, Promise<TenantMaterials>>();
  readonly #cache: ReturnType<typeof getLocalCryptographicMaterialsCache<NodeAlgorithmSuite>>;
  readonly #maxAgeMs: number;
  readonly #maxMessages: number;
  readonly #maxBytes: number;
  readonly #entries: number;

  constructor(options: FieldCipherOptions) {
    this.#keys = options.keys;
    this.#tenantOf = options.tenantOf;
    this.#maxAgeMs = options.maxAgeMs ?? DEFAULT_DATA_KEY_MAX_AGE_MS;
    this.#maxMessages = options.maxMessages ?? DEFAULT_DATA_KEY_MAX_MESSAGES;
    this.#maxBytes = options.maxBytes ?? DEFAULT_DATA_KEY_MAX_BYTES;
    this.#entries = options.cacheEntries ?? DEFAULT_DATA_KEY_CACHE_ENTRIES;
    this.#cache = getLocalCryptographicMaterialsCache(this.#entries);
  }

  /** False when `CONTENT_ENCRYPTION=off`: values are written clear and read only clear. */
  get enabled(): boolean {
    return this.#keys !== undefined;
  }

  /** The key source's kind, or undefined when encryption is off. */
  get keySource(): TenantKeys["kind"] | undefined {
    return this.#keys?.kind;
  }

  async sealText(conversationId: string, ref: FieldRef, text: string): Promise<StoredContent> {
    if (!this.#keys) return text;
    return this.#seal(await this.tenantOf(conversationId), ref, Buffer.from(text, "utf8"));
  }

  async openText(conversationId: string, ref: FieldRef, stored: unknown): Promise<string> {
    if (!this.#keys) return this.#clear(ref, stored);
    return (await this.#open(await this.tenantOf(conversationId), ref, stored)).toString("utf8");
  }

  /** A JSON value sealed whole (its JSON text); with encryption off, the value itself, stored as it is. */
  async sealJson<T>(conversationId: string, ref: FieldRef, value: T): Promise<T | Binary> {
    if (!this.#keys) return value;
    return this.#seal(await this.tenantOf(conversationId), ref, Buffer.from(JSON.stringify(value), "utf8"));
  }

  async openJson<T>(conversationId: string, ref: FieldRef, stored: unknown): Promise<T> {
    if (!this.#keys) {
      if (isCiphertext(stored)) throw refused("encryption_off", ref);
      return stored as T;
    }
    return JSON.parse(await this.openText(conversationId, ref, stored)) as T;
  }

  async sealJsonFor<T>(tenant: TenantRef, ref: FieldRef, value: T): Promise<T | Binary> {
    if (!this.#keys) return value;
    return this.#seal(tenant, ref, Buffer.from(JSON.stringify(value), "utf8"));
  }

  async openJsonFor<T>(tenant: TenantRef, ref: FieldRef, stored: unknown): Promise<T> {
    if (!this.#keys) {
      if (isCiphertext(stored)) throw refused("encryption_off", ref);
      return stored as T;
    }
    return JSON.parse((await this.#open(tenant, ref, stored)).toString("utf8")) as T;
  }

  async sealBytes(conversationId: string, ref: FieldRef, bytes: Uint8Array): Promise<Uint8Array | Binary> {
    if (!this.#keys) return bytes;
    return this.#seal(await this.tenantOf(conversationId), ref, bytes);
  }

  async openBytes(conversationId: string, ref: FieldRef, stored: unknown): Promise<Uint8Array> {
    if (!this.#keys) return CLEAR_FIELDS.openBytes(conversationId, ref, stored);
    if (!isCiphertext(stored)) throw refused("plaintext", ref);
    return this.#open(await this.tenantOf(conversationId), ref, stored);
  }

  /**
   * The stored value sealed again under its conversation's tenant's current key, or undefined when
   * that key sealed it already (and when it is no ciphertext: encryption off, or a clear value set-up
   * has not reached). What re-encryption after a rotation writes (docs/security.md, "Rotation").
   */
  async reseal(conversationId: string, ref: FieldRef, stored: unknown): Promise<Binary | undefined> {
    if (!this.#keys || !isCiphertext(stored)) return undefined;
    return this.resealFor(await this.tenantOf(conversationId), ref, stored);
  }

  /**
   * As `reseal`, under a tenant named directly. Which key sealed the value is read from its message
   * header: each encrypted data key's provider info names the key that wrapped it (a KMS key's ARN;
   * a local key's name followed by the wrapping's IV). A value under an earlier key is checked as a
   * read checks it (a moved or foreign ciphertext is refused, never re-sealed into place) and sealed
   * with the same binding and encryption context.
   */
  async resealFor(tenant: TenantRef, ref: FieldRef, stored: unknown): Promise<Binary | undefined> {
    if (!this.#keys || !isCiphertext(stored)) return undefined;
    const materials = await this.#materialsOf(tenant);
    // Told from the header alone: a value the current key sealed is not decrypted (a read checks its place).
    if (!this.sealedUnderOtherKey(stored, materials.current)) return undefined;
    const { plaintext } = await this.#openMessage(tenant, ref, stored);
    const { result } = await encrypt(materials.encrypt, plaintext, { suiteId: CONTENT_SUITE, encryptionContext: contextOf(tenant, ref) });
    return ciphertextOf(result);
  }

  /** Reads the message header only (the wrapped data keys' provider info, as `resealFor` does), decrypting nothing. */
  sealedUnderOtherKey(stored: unknown, key: string): boolean {
    if (!isCiphertext(stored)) return false;
    const header = deserializeMessageHeader(stored.buffer);
    // A header that does not parse is left to a read, which refuses it.
    return header !== false && !header.messageHeader.encryptedDataKeys.some((edk) => edk.providerInfo.startsWith(key));
  }

  /** The key new values of the tenant are sealed with, read again from the key source (not this process's cached keyrings). */
  async currentKey(tenant: TenantRef): Promise<string | undefined> {
    if (!this.#keys) return undefined;
    this.#materials.delete(tenantKey(tenant));
    return (await this.#materialsOf(tenant)).current;
  }

  /** Whether a stored value is a ciphertext of this cipher's form (what a migration leaves alone). */
  isSealed(stored: unknown): boolean {
    return isCiphertext(stored);
  }

  /** A conversation's tenant, remembered for the process (an owner never changes). */
  tenantOf(conversationId: string): Promise<TenantRef> {
    let tenant = this.#tenants.get(conversationId);
    if (!tenant) {
      tenant = this.#tenantOf(conversationId);
      tenant.catch(() => this.#tenants.delete(conversationId));
      this.#remember(this.#tenants, conversationId, tenant);
    }
    return tenant;
  }

  /** A new key for the tenant: this process's next writes use it at once, other processes' within the data keys' age. */
  async rotate(tenant: TenantRef, now?: Date): Promise<{ keyId: string; rotatedAt: Date }> {
    const keys = this.#require();
    const rotated = await keys.rotate(tenant, now);
    this.#materials.delete(tenantKey(tenant));
    return rotated;
  }

  /** Every tenant with keys and its current key's age (what scheduled rotation reads); none when encryption is off. */
  currentKeys(): Promise<TenantCurrentKey[]> {
    return this.#keys ? this.#keys.currentKeys() : Promise.resolve([]);
  }

  /** Destroys the tenant's keys; the receipt's `finalAt` adds the age a process may still hold one of its data keys. */
  async shred(tenant: TenantRef, now?: Date): Promise<ShredReceipt> {
    const receipt = await this.#require().shred(tenant, now);
    this.#materials.delete(tenantKey(tenant));
    return { ...receipt, finalAt: new Date(receipt.finalAt.getTime() + this.#maxAgeMs) };
  }

  #require(): TenantKeys {
    if (!this.#keys) throw new ContentEncryptionOffError("content encryption is off (CONTENT_ENCRYPTION=off): there are no tenant keys to rotate or shred");
    return this.#keys;
  }

  async #seal(tenant: TenantRef, ref: FieldRef, value: Uint8Array): Promise<Binary> {
    const materials = await this.#materialsOf(tenant);
    const binding = Buffer.from(JSON.stringify([ref.id, ref.field]), "utf8");
    const header = Buffer.alloc(4);
    header.writeUInt32BE(binding.length);
    const plaintext = Buffer.concat([header, binding, value]);
    const { result } = await encrypt(materials.encrypt, plaintext, { suiteId: CONTENT_SUITE, encryptionContext: contextOf(tenant, ref) });
    return ciphertextOf(result);
  }

  async #open(tenant: TenantRef, ref: FieldRef, stored: unknown): Promise<Buffer> {
    const { plaintext } = await this.#openMessage(tenant, ref, stored);
    const length = plaintext.readUInt32BE(0);
    return plaintext.subarray(4 + length);
  }

  /** The message's plaintext (the binding and the value) and header, once its tenant, collection, document and field are checked. */
  async #openMessage(tenant: TenantRef, ref: FieldRef, stored: unknown): Promise<{ plaintext: Buffer; header: MessageHeader }> {
    if (!isCiphertext(stored)) throw refused("plaintext", ref);
    const ciphertext = Buffer.from(stored.buffer.buffer, stored.buffer.byteOffset, stored.position);
    let out: Awaited<ReturnType<typeof decrypt>>;
    try {
      out = await decrypt((await this.#materialsOf(tenant)).decrypt, ciphertext);
    } catch (error) {
      // A key rotated in by another process since this one loaded the tenant's keyrings: reload once.
      this.#materials.delete(tenantKey(tenant));
      try {
        out = await decrypt((await this.#materialsOf(tenant)).decrypt, ciphertext);
      } catch {
        throw refused("undecryptable", ref, error);
      }
    }
    const context = out.messageHeader.encryptionContext;
    const expected = contextOf(tenant, ref);
    if (context[CONTEXT_TENANT] !== expected[CONTEXT_TENANT] || context[CONTEXT_COLLECTION] !== expected[CONTEXT_COLLECTION]) {
      throw refused("moved", ref);
    }
    const length = out.plaintext.readUInt32BE(0);
    if (out.plaintext.subarray(4, 4 + length).toString("utf8") !== JSON.stringify([ref.id, ref.field])) throw refused("moved", ref);
    return { plaintext: out.plaintext, header: out.messageHeader };
  }

  #clear(ref: FieldRef, stored: unknown): string {
    if (isCiphertext(stored)) throw refused("encryption_off", ref);
    return stored as string;
  }

  #materialsOf(tenant: TenantRef): Promise<TenantMaterials> {
    const key = tenantKey(tenant);
    const cached = this.#materials.get(key);
    if (cached) return cached.then((m) => (Date.now() - m.loadedAt < this.#maxAgeMs ? m : this.#reload(key, tenant)));
    return this.#reload(key, tenant);
  }

  #reload(key: string, tenant: TenantRef): Promise<TenantMaterials> {
    const loading = this.#require()
      .keyrings(tenant)
      .then((rings) => {
        const partition = `${key}#${rings.current}`;
        const cmm = (backingMaterials: typeof rings.encrypt, kind: string) =>
          new NodeCachingMaterialsManager({
            backingMaterials,
            cache: this.#cache,
            partition: `${partition}#${kind}`,
            maxAge: this.#maxAgeMs,
            maxMessagesEncrypted: this.#maxMessages,
            maxBytesEncrypted: this.#maxBytes,
          });
        return { loadedAt: Date.now(), current: rings.current, encrypt: cmm(rings.encrypt, "encrypt"), decrypt: cmm(rings.decrypt, "decrypt") };
      });
    loading.catch(() => this.#materials.delete(key));
    this.#remember(this.#materials, key, loading);
    return loading;
  }

  #remember<V>(map: Map<string, V>, key: string, value: V): void {
    map.delete(key);
    map.set(key, value);
    if (map.size > this.#entries) map.delete(map.keys().next().value as string);
  }
}

function contextOf(tenant: TenantRef, ref: FieldRef): Record<string, string> {
  return { [CONTEXT_TENANT]: tenantKey(tenant), [CONTEXT_COLLECTION]: ref.collection };
}
