import type { KeyringNode } from "@aws-crypto/material-management-node";
import type { IssuerKind } from "../auth/principal.js";

/** The registry of tenants' KMS keys (ARNs only), and their recall keys (sealed). */
export const CONTENT_KEYS_COLLECTION = "content_keys";

/** Whose key encrypts a content field: the conversation owner's issuer kind and tenant (null: the issuer's callers without one). */
export interface TenantRef {
  issuer: IssuerKind;
  tenant: string | null;
}

/** One string per tenant, distinct for distinct tenants: the encryption context's `threadwise:tenant` and the keys' index. */
export function tenantKey(tenant: TenantRef): string {
  return JSON.stringify([tenant.issuer, tenant.tenant]);
}

/** A tenant's keyrings: new values are encrypted under `current` only; any of its keys (rotated ones too) decrypts. */
export interface TenantKeyrings {
  encrypt: KeyringNode;
  decrypt: KeyringNode;
  /** The key new values are encrypted with (a local key's name, or a KMS key ARN). */
  current: string;
}

/** What a crypto-shred destroyed, and when it is final (docs/security.md, "Crypto-shredding"). */
export interface ShredReceipt {
  issuer: IssuerKind;
  tenant: string | null;
  /** `local`: the tenant's key file under `.local/` was deleted; `kms`: its KMS keys are scheduled for deletion. */
  keySource: "local" | "kms";
  /** Every key the tenant had (local key names, or KMS key ARNs); none when it had none. */
  keys: string[];
  shreddedAt: Date;
  /**
   * From when no copy of the key material exists: locally at once, plus the longest any process
   * may still hold a cached data key; with KMS, the end of the pending-deletion window (7–30 days,
   * during which the deletion can be cancelled), plus the same cache age.
   */
  finalAt: Date;
}

/** A tenant with keys, and its current key: what scheduled rotation reads (docs/security.md, "Rotation"). */
export interface TenantCurrentKey {
  tenant: TenantRef;
  /** The key new values are encrypted with (a local key's name, or a KMS key ARN). */
  keyId: string;
  /** When that key was made: a rotation, or the tenant's first write. */
  createdAt: Date;
}

/** Where tenants' key material lives: a key file per tenant locally, KMS keys per tenant in AWS. */
export interface TenantKeys {
  readonly kind: "local" | "kms";
  /** The tenant's keyrings, made with its first key on first use. */
  keyrings(tenant: TenantRef): Promise<TenantKeyrings>;
  /** Adds a new key that new writes use from now on; the tenant's earlier keys still decrypt. */
  rotate(tenant: TenantRef, now?: Date): Promise<{ keyId: string; rotatedAt: Date }>;
  /** Every tenant that has keys (none shredded), with its current key and when it was made. */
  currentKeys(): Promise<TenantCurrentKey[]>;
  /** Destroys every key of the tenant; what it encrypted cannot be read again, in any copy of the database. */
  shred(tenant: TenantRef, now?: Date): Promise<ShredReceipt>;
}
