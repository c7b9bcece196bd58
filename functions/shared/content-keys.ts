import { KMS } from "@aws-sdk/client-kms";
import type { MongoClient } from "mongodb";
import { NOT_CONFIGURED_RETRY_AFTER_S } from "../../lib/config/credentials.js";
import { createTenantKeys } from "../../lib/crypto/create-tenant-keys.js";
import type { TenantKeys } from "../../lib/crypto/tenant-keys.js";
import { ContentKeysUnavailableError, ServiceUnavailableError } from "../../lib/errors.js";
import { config, logger, tracer } from "./runtime.js";

/** The container's KMS client for tenants' keys, made on first use (the webhooks never import this module). */
let kms: KMS | undefined;

/**
 * Tenants' keys for contents at rest over `client`'s database (`CONTENT_KEYS=kms`: a KMS key per
 * tenant, docs/security.md, "Contents at rest in AWS"), or none with `CONTENT_ENCRYPTION=off`, which
 * is logged. A function in AWS has no `.local/`: encryption on with `CONTENT_KEYS=local` is logged
 * with the setting to give, and answered 503 (the deployment's fault, not the caller's).
 */
export function contentKeysFor(client: MongoClient): TenantKeys | undefined {
  try {
    const keys = createTenantKeys(config.encryption, { db: client.db(config.dbName), kms: (kms ??= tracer.captureAWSv3Client(new KMS({}))) });
    if (!keys) logger.warn("content encryption is off: conversations are stored in clear", { setting: "CONTENT_ENCRYPTION" });
    return keys;
  } catch (error) {
    if (!(error instanceof ContentKeysUnavailableError)) throw error;
    // The message names settings, never contents or keys: it is what the operator must change.
    logger.error("content keys unavailable", { reason: error.message, setting: "CONTENT_KEYS" });
    throw new ServiceUnavailableError("content encryption is misconfigured in this deployment (its logs say which setting)", NOT_CONFIGURED_RETRY_AFTER_S, {
      cause: error,
    });
  }
}
