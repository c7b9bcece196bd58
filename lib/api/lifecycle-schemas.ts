import { z } from "zod";
import { AUDIT_ACTIONS } from "../audit/audit-log.js";
import { ISSUER_KINDS } from "../auth/principal.js";
import { dataTargetSchema } from "../lifecycle/data-subject.js";

/**
 * The shapes of erasure, export and the audit log in the admin API (`lib/api/lifecycle-routes.ts`,
 * docs/data-lifecycle.md): a user or tenant named as the other admin routes name them, a deletion
 * receipt, an erasure job, and audit records.
 */

const name = z.string().min(1).max(200);
const issuer = z.enum(ISSUER_KINDS).meta({ description: "`api`, `slack` or `teams`." });

export const userQuery = z.strictObject({
  issuer,
  tenant: name.optional().meta({ description: "The tenant claim, Slack workspace or Entra tenant; absent for an API user without a tenant." }),
  subject: name.meta({ description: "The user." }),
});

export const tenantQuery = z.strictObject({ issuer, tenant: name.meta({ description: "The tenant claim, Slack workspace or Entra tenant." }) });

/** A user (with `subject`) or a tenant (without). */
export const exportQuery = z.strictObject({
  issuer,
  tenant: name.optional().meta({ description: "The tenant; required without `subject`." }),
  subject: name.optional().meta({ description: "The user; absent, the whole tenant." }),
});

export const erasureBody = z.strictObject({ target: dataTargetSchema.meta({ description: "A conversation, a user or a tenant." }) });

const actor = z.object({ issuer: z.string(), tenant: z.string().nullable(), subject: z.string() });

export const deletionReceipt = z.object({
  receiptId: z.string(),
  target: dataTargetSchema,
  requestedBy: actor,
  startedAt: z.iso.datetime(),
  completedAt: z.iso.datetime(),
  method: z.literal("deletion"),
  deleted: z.record(z.string(), z.number()).meta({ description: "Documents deleted, by collection." }),
  redacted: z.record(z.string(), z.number()).meta({ description: "Documents kept with the erased person's part removed, by collection." }),
  pending: z
    .array(z.object({ where: z.string(), what: z.string(), until: z.iso.datetime().nullable() }))
    .meta({ description: "What could not be deleted yet, and when it goes (null: a setting outside the product decides)." }),
  notes: z.array(z.string()),
  hashAlgorithm: z.literal("sha256-canonical-json"),
  hash: z.string().meta({ description: "SHA-256 of the canonical JSON (sorted keys, no whitespace) of every other field." }),
});

export const erasureView = z.object({
  erasureId: z.string(),
  status: z.enum(["running", "completed"]),
  target: dataTargetSchema,
  startedAt: z.iso.datetime(),
  completedAt: z.iso.datetime().nullable(),
  receipt: deletionReceipt.nullable(),
});

export const auditQuery = z.strictObject({
  issuer,
  tenant: name.optional().meta({ description: "The tenant; absent for API users without a tenant." }),
  after: z.coerce.number().int().min(0).optional().meta({ description: "Records after this sequence number. Default: from the first kept." }),
  limit: z.coerce.number().int().min(1).max(500).optional().meta({ description: "Most records. Default: 100." }),
});

export const auditRecordView = z.object({
  seq: z.number(),
  at: z.iso.datetime(),
  action: z.enum(AUDIT_ACTIONS),
  actor,
  tenant: z.object({ issuer: z.string(), tenant: z.string().nullable() }),
  resource: z.record(z.string(), z.string().nullable()),
  channel: z.string(),
  requestId: z.string().optional(),
  before: z.unknown().optional(),
  after: z.unknown().optional(),
  detail: z.record(z.string(), z.unknown()).optional(),
  prevHash: z.string(),
  hash: z.string(),
});

export const auditView = z.object({
  tenant: z.object({ issuer: z.string(), tenant: z.string().nullable() }),
  records: z.array(auditRecordView),
  nextAfter: z.number().nullable().meta({ description: "Pass as `after` for the next page; null when this is the last." }),
});
