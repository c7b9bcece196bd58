import type { JWTPayload } from "jose";
import { AuthenticationError } from "../errors.js";
import { apiPrincipal, type Caller } from "./principal.js";

export interface ClaimNames {
  tenantClaim: string;
  rolesClaim: string;
}

/** A list of strings, or one string of names separated by blanks or commas (as some identity providers send `scp`). */
function rolesOf(value: unknown, name: string): string[] {
  if (value === undefined) return [];
  if (typeof value === "string") return value.split(/[\s,]+/).filter(Boolean);
  if (Array.isArray(value) && value.every((role) => typeof role === "string")) return value.filter(Boolean);
  throw new AuthenticationError(`the ${name} claim must be a string or a list of strings`);
}

/**
 * The caller named by verified claims: an API principal (subject, optional tenant) and its roles.
 * Validated strictly: a subject or tenant that is not a non-empty string (a list, a number, "")
 * is refused rather than read as "no tenant", which would reach the conversations of callers
 * without one. Only the roles claim may be a list.
 */
export function callerFromClaims(claims: JWTPayload | Record<string, unknown>, names: ClaimNames): Caller {
  const sub = claims.sub;
  if (typeof sub !== "string" || sub.length === 0) throw new AuthenticationError("the sub claim must be a non-empty string");
  const tenant = claims[names.tenantClaim];
  if (tenant !== undefined && (typeof tenant !== "string" || tenant.length === 0)) {
    throw new AuthenticationError(`the ${names.tenantClaim} claim must be a non-empty string when present`);
  }
  return { principal: apiPrincipal(sub, tenant ?? null), roles: rolesOf(claims[names.rolesClaim], names.rolesClaim) };
}
