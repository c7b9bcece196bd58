import { ForbiddenError } from "../errors.js";
import type { Caller, IssuerKind } from "./principal.js";

/**
 * Who may administer which scope (docs/security.md, "The tenant boundary"): the one decision the
 * admin API's routes (limits, usage, MCP servers) make before they read or change anything.
 *
 * - An **operator** (`OPERATOR_ROLE`) administers every issuer and tenant. The role has no
 *   default, so a deployment has no operator until one is configured, and it is honoured only on
 *   an API token (a Slack or Teams role of the same name is not an operator).
 * - A **tenant admin** (`LIMITS_ADMIN_ROLE`) administers its own issuer and tenant: the tenant as
 *   a whole and its users, never another issuer's or tenant's. A tenant admin whose token names
 *   no tenant administers nothing.
 */
export interface AdminRoles {
  /** `OPERATOR_ROLE`; unset: nobody is an operator. */
  operatorRole?: string;
  /** `LIMITS_ADMIN_ROLE`: the admin of the caller's own tenant. */
  tenantAdminRole: string;
}

/** What an admin request acts on: a tenant (no subject) or one of its users. */
export interface AdminTarget {
  issuer: IssuerKind;
  tenant: string | null;
  subject?: string | null;
}

/** What a caller may administer: everything, or one issuer's tenant. */
export type AdminAuthority = { kind: "operator" } | { kind: "tenant"; issuer: IssuerKind; tenant: string };

const named = (issuer: IssuerKind, tenant: string | null) => `${issuer}/${tenant ?? "(no tenant)"}`;

/**
 * The caller's authority over the admin API; `ForbiddenError` (403) when it has none: no admin
 * role, or the tenant-admin role on a token that names no tenant.
 */
export function adminAuthorityOf(caller: Caller, roles: AdminRoles): AdminAuthority {
  const { principal } = caller;
  if (roles.operatorRole !== undefined && principal.issuer === "api" && caller.roles.includes(roles.operatorRole)) return { kind: "operator" };
  if (!caller.roles.includes(roles.tenantAdminRole)) {
    throw new ForbiddenError(`the admin API needs the ${roles.tenantAdminRole} role (your own tenant's admin) or the deployment's operator role`);
  }
  if (principal.tenant === null) {
    throw new ForbiddenError(`the ${roles.tenantAdminRole} role administers the caller's own tenant, and this token names none: it administers nothing`);
  }
  return { kind: "tenant", issuer: principal.issuer, tenant: principal.tenant };
}

/** Whether an authority covers a target: an operator all, a tenant admin its own issuer and tenant. */
export function authorityCovers(authority: AdminAuthority, target: AdminTarget): boolean {
  return authority.kind === "operator" || (authority.issuer === target.issuer && authority.tenant === target.tenant);
}

/**
 * The caller's authority, checked against what the request acts on; `ForbiddenError` (403), before
 * anything is read or changed, for a target outside it.
 */
export function authorizeAdmin(caller: Caller, roles: AdminRoles, target: AdminTarget): AdminAuthority {
  const authority = adminAuthorityOf(caller, roles);
  if (!authorityCovers(authority, target)) {
    const own = authority.kind === "tenant" ? named(authority.issuer, authority.tenant) : "";
    throw new ForbiddenError(`a tenant admin administers its own tenant (${own}) and its users only, not ${named(target.issuer, target.tenant)}`);
  }
  return authority;
}
