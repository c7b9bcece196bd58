import type { Principal } from "../auth/principal.js";

/** Whose limits: one user, or every user of one tenant together. */
export type ScopeKind = "user" | "tenant";

/** A tenant or a user as the limits and the admin API name them. */
export interface LimitScope {
  kind: ScopeKind;
  issuer: Principal["issuer"];
  tenant: string | null;
  /** Null for a tenant. */
  subject: string | null;
}

/** One string per scope: the `_id` of its counters and limits, the prefix of its usage. */
export function scopeId(scope: LimitScope): string {
  return scope.kind === "user" ? `u:${JSON.stringify([scope.issuer, scope.tenant, scope.subject])}` : `t:${JSON.stringify([scope.issuer, scope.tenant])}`;
}

/** The scopes a principal's turns count against: the user, and its tenant when it has one. */
export function scopesOf(principal: Principal): LimitScope[] {
  const user: LimitScope = { kind: "user", issuer: principal.issuer, tenant: principal.tenant, subject: principal.subject };
  if (principal.tenant === null) return [user];
  return [user, { kind: "tenant", issuer: principal.issuer, tenant: principal.tenant, subject: null }];
}
