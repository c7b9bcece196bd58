import { KMS } from "@aws-sdk/client-kms";
import type { Db } from "mongodb";
import type { EncryptionConfig } from "../config/encryption-config.js";
import { ContentKeysUnavailableError } from "../errors.js";
import { type ContentKeyDocument, KmsTenantKeys } from "./kms-tenant-keys.js";
import { LocalTenantKeys } from "./local-tenant-keys.js";
import { CONTENT_KEYS_COLLECTION, type TenantKeys } from "./tenant-keys.js";

export interface TenantKeysParts {
  db: Db;
  /** The local server's directory (`.local/`), where `CONTENT_KEYS=local` keeps key files. Default: none. */
  localDir?: string;
  /** Default: a client of the function's region. */
  kms?: KMS;
}

/** The key source the configuration names, or undefined when `CONTENT_ENCRYPTION=off`. */
export function createTenantKeys(config: EncryptionConfig, parts: TenantKeysParts): TenantKeys | undefined {
  if (!config.enabled) return undefined;
  if (config.keys === "kms") {
    const registry = parts.db.collection<ContentKeyDocument>(CONTENT_KEYS_COLLECTION);
    return new KmsTenantKeys(parts.kms ?? new KMS({}), registry, {
      deletionWindowDays: config.keyDeletionDays,
      deployment: config.keyDeployment,
    });
  }
  if (parts.localDir) return new LocalTenantKeys(parts.localDir);
  throw new ContentKeysUnavailableError(
    "content encryption is on with CONTENT_KEYS=local, which only the local server has: " +
      "set CONTENT_KEYS=kms (AWS), or CONTENT_ENCRYPTION=off to store contents in clear",
  );
}
