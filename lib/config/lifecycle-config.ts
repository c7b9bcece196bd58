import { z } from "zod";
import { parseOrThrow } from "../validation.js";
import { envSchemaOf, setting, withDefaults } from "./settings.js";

/** Days an audit record is kept (docs/data-lifecycle.md, "Audit log"): a little over a year, as security reviews ask. */
export const DEFAULT_AUDIT_RETENTION_DAYS = 400;

/** The settings of erasure, export and the audit log, defined once (see `settings.ts`). */
export const LIFECYCLE_SETTINGS = {
  AUDIT_RETENTION_DAYS: setting({
    schema: z.coerce.number().int().positive().max(36_500),
    default: DEFAULT_AUDIT_RETENTION_DAYS,
    description: "days an audit record is kept (its own retention, apart from `RETENTION_DAYS`; [data-lifecycle.md](data-lifecycle.md#audit-log))",
  }),
};

const envSchema = envSchemaOf(LIFECYCLE_SETTINGS);

/** Erasure, export and the audit log (`lib/lifecycle`, `lib/audit`, docs/data-lifecycle.md). */
export interface LifecycleConfig {
  /** Default: {@link DEFAULT_AUDIT_RETENTION_DAYS}. */
  auditRetentionDays: number;
}

export function loadLifecycleConfig(env: Record<string, string | undefined>): LifecycleConfig {
  const e = withDefaults(LIFECYCLE_SETTINGS, parseOrThrow(envSchema, env, "invalid configuration"));
  return { auditRetentionDays: e.AUDIT_RETENTION_DAYS };
}
