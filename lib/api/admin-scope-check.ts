import type { Caller } from "../auth/principal.js";
import { ForbiddenError } from "../errors.js";

/** The roles the admin API checks: the admin role (`LIMITS_ADMIN_ROLE`) and the operator role (`ADMIN_OPERATOR_ROLE`, unset: nobody). */
export interface AdminRoles {
  adminRole: string;
  operatorRole?: string;
}

/** Whether the caller holds the operator role, which administers every tenant. */
export const isOperator = (caller: Caller, roles: AdminRoles): boolean => roles.operatorRole !== undefined && caller.roles.includes(roles.operatorRole);

/**
 * Who may administer which tenant, for erasure, export and the audit log: an operator any; a
 * caller with the admin role only the tenant of their own token (the same issuer kind and tenant),
 * and not at all without a tenant; anyone else none (ForbiddenError, nothing read or changed).
 * One function, so that the shared check of the admin API can replace it.
 */
export function assertMayAdminister(caller: Caller, tenant: { issuer: string; tenant: string | null }, roles: AdminRoles): void {
  if (isOperator(caller, roles)) return;
  if (!caller.roles.includes(roles.adminRole)) throw new ForbiddenError(`the admin API needs the ${roles.adminRole} role`);
  const own = caller.principal;
  if (own.tenant === null) throw new ForbiddenError("a tenant admin needs a tenant in their token; an operator administers the others");
  if (own.issuer !== tenant.issuer || own.tenant !== tenant.tenant) {
    throw new ForbiddenError("a tenant admin administers their own tenant only; this one is another's");
  }
}
