import type { JWTPayload } from "jose";
import { AuthenticationError } from "../errors.js";
import { apiPrincipal, type Caller } from "./principal.js";

export interface ClaimNames {
  tenantClaim: string;
  rolesClaim: string;
  /**
   * Refuse a token without the tenant claim (`JWT_REQUIRE_TENANT`): where every caller belongs to a
   * tenant, a token without one would be a principal `(api, null, sub)` outside every tenant's
   * limits and admin. A Cognito access token is one: it carries no `custom:*` attribute, and API
   * Gateway's JWT authorizer accepts it (its `client_id` stands for the absent `aud`). Default: false.
   */
  requireTenant?: boolean;
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
 * without one; with `requireTenant`, so is a token without one. Only the roles claim may be a list.
 */
export function callerFromClaims(claims: JWTPayload | Record<string, unknown>, names: ClaimNames): Caller {
  const sub = claims.sub;
  if (typeof sub !== "string" || sub.length === 0) throw new AuthenticationError("the sub claim must be a non-empty string");
  const tenant = claims[names.tenantClaim];
  if (tenant !== undefined && (typeof tenant !== "string" || tenant.length === 0)) {
    throw new AuthenticationError(`the ${names.tenantClaim} claim must be a non-empty string when present`);
  }
  if (tenant === undefined && names.requireTenant) {
    const hint = claims.token_use === "access" ? ": a Cognito access token carries none, send the ID token" : "";
    throw new AuthenticationError(`this deployment requires the ${names.tenantClaim} claim on every API token, and this token has none${hint}`);
  }
  return { principal: apiPrincipal(sub, tenant ?? null), roles: rolesOf(claims[names.rolesClaim], names.rolesClaim) };
}
