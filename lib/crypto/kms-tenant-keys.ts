import { KmsKeyringNode } from "@aws-crypto/kms-keyring-node";
import type { KMS } from "@aws-sdk/client-kms";
import type { Collection } from "mongodb";
import { DEPLOYMENT_KEY_TAG, TENANT_KEY_TAG } from "../config/encryption-config.js";
import { type ShredReceipt, type TenantCurrentKey, type TenantKeyrings, type TenantKeys, type TenantRef, tenantKey } from "./tenant-keys.js";

/** Days KMS waits before deleting a shredded tenant's keys (KMS allows 7–30; the deletion can be cancelled meanwhile). */
export const DEFAULT_KEY_DELETION_WINDOW_DAYS = 7;
/**
 * How long after a key is made its refused uses are tried again: KMS says a tag may take up to five minutes
 * to affect authorization, and the stack grants the keys' use by their tags (docs/security.md, "Contents at rest in AWS").
 */
export const NEW_KEY_AUTHORIZATION_MS = 5 * 60_000;
/** The waits between tries of a new key's refused use: about 15 s in all, within an API turn's time. */
export const DEFAULT_NEW_KEY_RETRY_DELAYS_MS: readonly number[] = [250, 500, 1_000, 2_000, 4_000, 8_000];
/** The keys' tags (defined with the settings, where the stack reads them too). */
export { DEPLOYMENT_KEY_TAG, TENANT_KEY_TAG } from "../config/encryption-config.js";

/** One tenant's KMS keys, by ARN (no key material: KMS keeps that). */
export interface ContentKeyDocument {
  /** `tenantKey(tenant)`. */
  _id: string;
  issuer: TenantRef["issuer"];
  tenant: string | null;
  /** Oldest first; the last encrypts new values. Empty once shredded. */
  keys: { arn: string; createdAt: Date }[];
  /** Keys scheduled for deletion by a shred, and when they are deleted. */
  shredded?: { arn: string; deletionDate: Date }[];
}

export interface KmsTenantKeysOptions {
  /** Days before KMS deletes a shredded key. Default: {@link DEFAULT_KEY_DELETION_WINDOW_DAYS}. */
  deletionWindowDays?: number;
  /** The {@link DEPLOYMENT_KEY_TAG} value of the keys made (`CONTENT_KEY_DEPLOYMENT`). Default: none, no such tag. */
  deployment?: string;
  /** Waits between tries of a refused use of a key made less than {@link NEW_KEY_AUTHORIZATION_MS} ago. Default: {@link DEFAULT_NEW_KEY_RETRY_DELAYS_MS}. */
  newKeyRetryDelaysMs?: readonly number[];
}

/**
 * The AWS key hierarchy: one KMS key per tenant (a symmetric customer managed key made on the
 * tenant's first write, tagged with the tenant), recorded by ARN in `content_keys`. Data keys are
 * KMS `GenerateDataKey`s under the tenant's newest key, bound to the encryption context; rotation
 * makes a new key, and shredding schedules every key of the tenant for deletion.
 */
export class KmsTenantKeys implements TenantKeys {
  readonly kind = "kms" as const;
  readonly #kms: KMS;
  readonly #registry: Collection<ContentKeyDocument>;
  readonly #deletionWindowDays: number;
  readonly #deployment: string | undefined;
  readonly #retryDelaysMs: readonly number[];

  constructor(kms: KMS, registry: Collection<ContentKeyDocument>, options: KmsTenantKeysOptions = {}) {
    this.#kms = kms;
    this.#registry = registry;
    this.#deletionWindowDays = options.deletionWindowDays ?? DEFAULT_KEY_DELETION_WINDOW_DAYS;
    this.#deployment = options.deployment;
    this.#retryDelaysMs = options.newKeyRetryDelaysMs ?? DEFAULT_NEW_KEY_RETRY_DELAYS_MS;
  }

  async keyrings(tenant: TenantRef): Promise<TenantKeyrings> {
    let doc = await this.#registry.findOne({ _id: tenantKey(tenant) });
    if (!doc || doc.keys.length === 0) doc = await this.#createFirst(tenant);
    const arns = doc.keys.map((k) => k.arn);
    const current = arns[arns.length - 1];
    const recent = new Set(doc.keys.filter((k) => Date.now() - k.createdAt.getTime() < NEW_KEY_AUTHORIZATION_MS).map((k) => k.arn));
    const client = recent.size === 0 ? this.#kms : retryingRefusals(this.#kms, recent, this.#retryDelaysMs);
    const clientProvider = () => client;
    return {
      encrypt: new KmsKeyringNode({ clientProvider, generatorKeyId: current }),
      decrypt: new KmsKeyringNode({ clientProvider, keyIds: arns }),
      current,
    };
  }

  async rotate(tenant: TenantRef, now = new Date()): Promise<{ keyId: string; rotatedAt: Date }> {
    const arn = await this.#createKey(tenant);
    const existing = (await this.#registry.findOne({ _id: tenantKey(tenant) }))?.keys ?? [];
    // A whole-array `$set` (the embedded server has no `$push`): rotations are rare and made by an operator's command.
    await this.#registry.updateOne(
      { _id: tenantKey(tenant) },
      { $set: { keys: [...existing, { arn, createdAt: now }] }, $setOnInsert: { issuer: tenant.issuer, tenant: tenant.tenant } },
      { upsert: true },
    );
    return { keyId: arn, rotatedAt: now };
  }

  async currentKeys(): Promise<TenantCurrentKey[]> {
    // One document per tenant: read whole (a shredded tenant has no keys left and is skipped).
    const docs = await this.#registry.find({}).toArray();
    return docs.flatMap((doc) => {
      const current = doc.keys.at(-1);
      return current ? [{ tenant: { issuer: doc.issuer, tenant: doc.tenant }, keyId: current.arn, createdAt: current.createdAt }] : [];
    });
  }

  async shred(tenant: TenantRef, now = new Date()): Promise<ShredReceipt> {
    const doc = await this.#registry.findOne({ _id: tenantKey(tenant) });
    const shredded: { arn: string; deletionDate: Date }[] = [];
    for (const { arn } of doc?.keys ?? []) {
      const out = await this.#kms.scheduleKeyDeletion({ KeyId: arn, PendingWindowInDays: this.#deletionWindowDays });
      shredded.push({ arn, deletionDate: out.DeletionDate ?? new Date(now.getTime() + this.#deletionWindowDays * 86_400_000) });
    }
    if (doc) await this.#registry.updateOne({ _id: doc._id }, { $set: { keys: [], shredded: [...(doc.shredded ?? []), ...shredded] } });
    const finalAt = new Date(Math.max(now.getTime(), ...shredded.map((s) => s.deletionDate.getTime())));
    return { ...tenant, keySource: "kms", keys: shredded.map((s) => s.arn), shreddedAt: now, finalAt };
  }

  /** The tenant's first key; when another process made one meanwhile, ours is scheduled for deletion and theirs is used. */
  async #createFirst(tenant: TenantRef): Promise<ContentKeyDocument> {
    const arn = await this.#createKey(tenant);
    const _id = tenantKey(tenant);
    const doc: ContentKeyDocument = { _id, issuer: tenant.issuer, tenant: tenant.tenant, keys: [{ arn, createdAt: new Date() }] };
    const { modifiedCount, upsertedCount } = await this.#registry
      .updateOne({ _id, keys: { $size: 0 } }, { $set: { keys: doc.keys }, $setOnInsert: { issuer: doc.issuer, tenant: doc.tenant } }, { upsert: true })
      .catch((error: unknown) => {
        // A duplicate key: another process inserted the tenant's document (with its key) between our read and write.
        if ((error as { code?: number }).code === 11000) return { modifiedCount: 0, upsertedCount: 0 };
        throw error;
      });
    if (modifiedCount + upsertedCount > 0) return doc;
    await this.#kms.scheduleKeyDeletion({ KeyId: arn, PendingWindowInDays: this.#deletionWindowDays });
    return (await this.#registry.findOne({ _id })) as ContentKeyDocument;
  }

  async #createKey(tenant: TenantRef): Promise<string> {
    const out = await this.#kms.createKey({
      Description: `Threadwise contents of tenant ${tenantKey(tenant)}`,
      KeyUsage: "ENCRYPT_DECRYPT",
      KeySpec: "SYMMETRIC_DEFAULT",
      Tags: [
        { TagKey: TENANT_KEY_TAG, TagValue: tenantKey(tenant).slice(0, 256) },
        ...(this.#deployment === undefined ? [] : [{ TagKey: DEPLOYMENT_KEY_TAG, TagValue: this.#deployment }]),
      ],
    });
    const arn = out.KeyMetadata?.Arn;
    if (!arn) throw new Error("KMS CreateKey returned no key ARN");
    return arn;
  }
}

/**
 * `kms` with its data-key calls on `keys` tried again, after each of `delaysMs`, while KMS refuses them
 * (`AccessDeniedException`): a key just made may be refused until its tags reach authorization. Any other
 * error, or a key not in `keys`, fails at once.
 */
function retryingRefusals(kms: KMS, keys: ReadonlySet<string>, delaysMs: readonly number[]): KMS {
  const retrying =
    <I extends { KeyId?: string }, O>(call: (input: I) => Promise<O>) =>
    async (input: I): Promise<O> => {
      for (let attempt = 0; ; attempt++) {
        try {
          return await call(input);
        } catch (error) {
          const refused = (error as { name?: string }).name === "AccessDeniedException" && keys.has(input.KeyId ?? "");
          if (!refused || attempt >= delaysMs.length) throw error;
          await new Promise((resolve) => setTimeout(resolve, delaysMs[attempt]));
        }
      }
    };
  return new Proxy(kms, {
    get(target, property, receiver) {
      if (property === "generateDataKey" || property === "decrypt") {
        const call = Reflect.get(target, property, receiver) as (input: { KeyId?: string }) => Promise<unknown>;
        return retrying(call.bind(target));
      }
      return Reflect.get(target, property, receiver);
    },
  });
}
