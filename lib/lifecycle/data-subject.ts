import { z } from "zod";
import { ISSUER_KINDS, type IssuerKind } from "../auth/principal.js";
import { scopeId } from "../limits/limit-scope.js";
import { COLLECTIONS } from "../store/collections.js";
import { OWNER_FIELD } from "../store/retention.js";

const name = z.string().min(1).max(200);

/**
 * What an erasure or an export is of (docs/data-lifecycle.md): one conversation; one user, a
 * principal as the API names it (issuer kind, tenant, subject); or one tenant of an issuer kind.
 */
export const dataTargetSchema = z.discriminatedUnion("kind", [
  z.strictObject({ kind: z.literal("conversation"), conversationId: name }),
  z.strictObject({ kind: z.literal("user"), issuer: z.enum(ISSUER_KINDS), tenant: name.nullable(), subject: name }),
  z.strictObject({ kind: z.literal("tenant"), issuer: z.enum(ISSUER_KINDS), tenant: name }),
]);
export type DataTarget = z.infer<typeof dataTargetSchema>;
export type UserTarget = Extract<DataTarget, { kind: "user" }>;
export type TenantTarget = Extract<DataTarget, { kind: "tenant" }>;

/** A user (subject given) or a whole tenant (subject absent): whose data a filter selects. */
export interface DataSubject {
  issuer: IssuerKind;
  tenant: string | null;
  subject?: string;
}

export const subjectOf = (target: UserTarget | TenantTarget): DataSubject =>
  target.kind === "user" ? { issuer: target.issuer, tenant: target.tenant, subject: target.subject } : { issuer: target.issuer, tenant: target.tenant };

/** A filter on the principal stored under `prefix` (`owner`, `askedBy`, `createdBy`…; "" for top-level fields). */
export function principalFilter(prefix: string, who: DataSubject): Record<string, unknown> {
  const at = (field: string) => (prefix === "" ? field : `${prefix}.${field}`);
  return { [at("issuer")]: who.issuer, [at("tenant")]: who.tenant, ...(who.subject !== undefined && { [at("subject")]: who.subject }) };
}

/** The opposite of {@link principalFilter}: documents whose principal under `prefix` is someone else's. */
export function notPrincipalFilter(prefix: string, who: DataSubject): Record<string, unknown> {
  return { $nor: [principalFilter(prefix, who)] };
}

/** Every collection that holds a conversation's documents, and the field naming it; `turn_jobs` name it by `job.conversationKey`. */
export const CONVERSATION_COLLECTIONS: readonly (readonly [string, string])[] = [
  ...Object.entries(OWNER_FIELD),
  [COLLECTIONS.turnEvents, "conversationId"],
  [COLLECTIONS.idempotency, "conversationId"],
];

const escapeRegex = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** The ids of a user's or tenant's limit counters and limits, and the prefix of their usage days (`scopeId|day`). */
export function limitScopeFilter(field: string, who: DataSubject): Record<string, unknown> {
  if (who.subject !== undefined) {
    const id = scopeId({ kind: "user", issuer: who.issuer, tenant: who.tenant, subject: who.subject });
    return field === "_id" ? { _id: id } : { [field]: id };
  }
  const tenantId = scopeId({ kind: "tenant", issuer: who.issuer, tenant: who.tenant, subject: null });
  // A user scope's id is `u:["issuer","tenant","subject"]`: the tenant's users share its first two members.
  const usersPrefix = `u:${JSON.stringify([who.issuer, who.tenant]).slice(0, -1)},`;
  return { $or: [{ [field]: tenantId }, { [field]: { $regex: `^${escapeRegex(usersPrefix)}` } }] };
}

/** A usage day's `_id` is `scopeId|day`; its `scopeId` field is the scope's id. */
export const usageFilter = (who: DataSubject) => limitScopeFilter("scopeId", who);
