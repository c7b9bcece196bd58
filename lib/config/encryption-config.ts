import { z } from "zod";
import { parseOrThrow } from "../validation.js";
import { durationSeconds, envSchemaOf, setting, withDefaults } from "./settings.js";

/** Content encryption at rest unless `CONTENT_ENCRYPTION=off` says otherwise (docs/security.md, "Contents at rest"). */
export const DEFAULT_CONTENT_ENCRYPTION = "on";
/** Where tenants' keys are when `CONTENT_KEYS` is unset: a key file per tenant under `.local/`. */
export const DEFAULT_CONTENT_KEYS = "local";
/** Seconds a data key (and a tenant's keyrings) is reused before the key source is asked again. */
export const DEFAULT_CONTENT_DATA_KEY_MAX_AGE_SECONDS = 300;
/** Days KMS waits before deleting a shredded tenant's keys (7–30). */
export const DEFAULT_CONTENT_KEY_DELETION_DAYS = 7;

/** Days a tenant's key is used before the schedule rotates it; 0 turns scheduled rotation off (rotation on demand still works). */
export const DEFAULT_CONTENT_KEY_ROTATION_DAYS = 0;
/** The tag every tenant key carries, its value the tenant (`tenantKey`), so IAM and audits can tell whose it is. */
export const TENANT_KEY_TAG = "threadwise:tenant";
/**
 * The tag naming the deployment (the stage) whose functions made the key (`CONTENT_KEY_DEPLOYMENT`): the stack's IAM
 * policy lets a stage's functions use only keys carrying its own value, so two stages in one account cannot use each other's keys.
 */
export const DEPLOYMENT_KEY_TAG = "threadwise:deployment";

/** Encryption of contents at rest, defined once (see `settings.ts`). */
export const ENCRYPTION_SETTINGS = {
  CONTENT_ENCRYPTION: setting({
    schema: z.enum(["on", "off"]),
    default: DEFAULT_CONTENT_ENCRYPTION,
    description: "`off` stores conversations' contents in clear (preflight and start-up say so); `on` encrypts them per tenant (docs/security.md)",
  }),
  CONTENT_KEYS: setting({
    schema: z.enum(["local", "kms"]),
    default: DEFAULT_CONTENT_KEYS,
    description: "where tenants' keys are: `local`, a key file per tenant under `.local/content-keys/` (local server); `kms`, a KMS key per tenant (AWS)",
  }),
  CONTENT_DATA_KEY_MAX_AGE_SECONDS: setting({
    schema: durationSeconds,
    default: DEFAULT_CONTENT_DATA_KEY_MAX_AGE_SECONDS,
    description: "seconds a data key is reused before KMS (or the key file) is asked again; also how long a rotation or shred takes to reach every process",
  }),
  CONTENT_KEY_DEPLOYMENT: setting({
    schema: z.string().regex(/^[\w.:/=+@-]{1,128}$/),
    defaultText: "unset",
    description: "the `threadwise:deployment` tag of the KMS keys made, which the stack's IAM policy requires (the stack sets it)",
  }),
  CONTENT_KEY_DELETION_DAYS: setting({
    schema: z.coerce.number().int().min(7).max(30),
    default: DEFAULT_CONTENT_KEY_DELETION_DAYS,
    description: "days KMS waits before deleting a shredded tenant's keys (7–30); the shred is final then",
  }),
  CONTENT_KEY_ROTATION_DAYS: setting({
    schema: z.coerce.number().int().min(0).max(3650),
    default: DEFAULT_CONTENT_KEY_ROTATION_DAYS,
    description: "days before key maintenance rotates a tenant's key; 0: never",
  }),
};

const envSchema = envSchemaOf(ENCRYPTION_SETTINGS);

export interface EncryptionConfig {
  /** Default: on. */
  enabled: boolean;
  /** Default: `local`. */
  keys: "local" | "kms";
  /** Default: `DEFAULT_CONTENT_DATA_KEY_MAX_AGE_SECONDS`. */
  dataKeyMaxAgeSeconds: number;
  /** Default: `DEFAULT_CONTENT_KEY_DELETION_DAYS`. */
  keyDeletionDays: number;
  /** Default: `DEFAULT_CONTENT_KEY_ROTATION_DAYS` (off). */
  keyRotationDays: number;
  /** The `threadwise:deployment` tag of the KMS keys made (`CONTENT_KEY_DEPLOYMENT`). Default: none. */
  keyDeployment?: string;
}

export function loadEncryptionConfig(env: Record<string, string | undefined>): EncryptionConfig {
  const e = withDefaults(ENCRYPTION_SETTINGS, parseOrThrow(envSchema, env, "invalid configuration"));
  return {
    enabled: e.CONTENT_ENCRYPTION === "on",
    keys: e.CONTENT_KEYS,
    dataKeyMaxAgeSeconds: e.CONTENT_DATA_KEY_MAX_AGE_SECONDS,
    keyDeletionDays: e.CONTENT_KEY_DELETION_DAYS,
    keyRotationDays: e.CONTENT_KEY_ROTATION_DAYS,
    keyDeployment: e.CONTENT_KEY_DEPLOYMENT,
  };
}
