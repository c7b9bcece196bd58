import type { JWTPayload } from "jose";
import { AuthenticationError } from "../errors.js";
import type { Caller } from "../tools/tool.js";

export interface ClaimNames {
  tenantClaim: string;
  rolesClaim: string;
}

function asRoles(value: unknown): string[] {
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === "string");
  if (typeof value === "string") return value.split(/[\s,]+/).filter(Boolean);
  return [];
}

/** The caller named by verified claims: subject = user, optional tenant and roles. */
export function callerFromClaims(claims: JWTPayload | Record<string, unknown>, names: ClaimNames): Caller {
  const sub = claims.sub;
  if (typeof sub !== "string" || sub.length === 0) throw new AuthenticationError("token has no subject");
  const tenant = claims[names.tenantClaim];
  return {
    userId: sub,
    tenantId: typeof tenant === "string" && tenant.length > 0 ? tenant : undefined,
    roles: asRoles(claims[names.rolesClaim]),
  };
}
