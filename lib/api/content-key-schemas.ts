import { z } from "zod";
import { ISSUER_KINDS } from "../auth/principal.js";

/** The content-key routes' shapes (`lib/api/content-key-routes.ts`, docs/security.md "Rotation"). */

const tenantName = z.string().min(1).max(200);

/** Which tenant: as the other admin routes name one. */
export const contentKeyTenantQuery = z.strictObject({
  issuer: z.enum(ISSUER_KINDS).meta({ description: "`api`, `slack` or `teams`." }),
  tenant: tenantName
    .optional()
    .meta({ description: "The tenant claim, Slack workspace or Entra tenant; absent for API users without a tenant (an operator only)." }),
});

export const rotateContentKeyBody = contentKeyTenantQuery;

const tenant = z.object({ issuer: z.enum(ISSUER_KINDS), tenant: z.string().nullable() });

export const reencryptionView = z.object({
  status: z.enum(["pending", "running", "done"]).meta({ description: "`pending` until `effectiveAt` (or between runs), `running`, `done`." }),
  keyId: z.string().meta({ description: "The key values are re-sealed under: the rotation's new key." }),
  rotatedAt: z.iso.datetime(),
  effectiveAt: z.iso.datetime().meta({ description: "When every process seals under the new key; re-encryption starts then." }),
  position: z
    .object({ walker: z.string(), collection: z.string() })
    .nullable()
    .meta({ description: "The walker and collection of the last batch done; null before the first." }),
  counts: z.object({
    examined: z.number().meta({ description: "Documents read (every tenant's; only this tenant's are decrypted)." }),
    resealed: z.number().meta({ description: "Fields written under the new key." }),
    raced: z.number().meta({ description: "Documents a concurrent write changed first (read again; the write wins)." }),
  }),
  startedAt: z.iso.datetime().nullable(),
  updatedAt: z.iso.datetime(),
  finishedAt: z.iso.datetime().nullable(),
});

export const rotationView = z.object({
  tenant,
  keyId: z.string().meta({ description: "The new key (a local key's name, or a KMS key ARN); never key material." }),
  rotatedAt: z.iso.datetime(),
  effectiveAt: z.iso.datetime().meta({ description: "From when every process seals under it: the rotation plus CONTENT_DATA_KEY_MAX_AGE_SECONDS." }),
  reencryption: reencryptionView,
});

export const contentKeyStatusView = z.object({
  tenant,
  reencryption: reencryptionView.nullable().meta({ description: "The latest rotation's re-encryption; null when the tenant's key never rotated." }),
});
