import type { Principal } from "../../auth/principal.js";
import { ToolError } from "../../errors.js";

/** An Entra object id: what Teams names a user by. */
const OBJECT_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The key of a principal in `POWERBI_IDENTITY_MAP`: `issuer:tenant:subject` (`api::sub` for an API caller without a tenant). */
export function powerBiIdentityKey(principal: Principal): string {
  return `${principal.issuer}:${principal.tenant ?? ""}:${principal.subject}`;
}

export interface PowerBiIdentityOptions {
  /** The Entra tenant of the Power BI workspace (`POWERBI_TENANT_ID`): only its own Teams and API users are named by their subject. */
  entraTenantId: string;
  /** `issuer:tenant:subject` → the user principal name Power BI impersonates (`POWERBI_IDENTITY_MAP`). Default: none. */
  map?: Readonly<Record<string, string>>;
}

/**
 * The Power BI user a caller is queried as (`impersonatedUserName`), so the semantic model's
 * row-level security applies to them: the caller's entry in the identity map; otherwise, for a
 * Teams user of the workspace's own Entra tenant, their Entra object id; for an API user whose
 * token names that tenant, the token's subject (the UPN or object id, as the issuer puts it).
 * Anyone else (every Slack user without an entry, a Teams guest from another tenant) is refused:
 * Power BI is never queried as the service principal itself.
 */
export function powerBiUserOf(principal: Principal, options: PowerBiIdentityOptions): string {
  const key = powerBiIdentityKey(principal);
  const mapped = options.map !== undefined && Object.hasOwn(options.map, key) ? options.map[key] : undefined;
  if (mapped) return mapped;
  const ownTenant = principal.tenant !== null && principal.tenant.toLowerCase() === options.entraTenantId.toLowerCase();
  if (ownTenant && principal.issuer === "teams" && OBJECT_ID.test(principal.subject)) return principal.subject;
  if (ownTenant && principal.issuer === "api") return principal.subject;
  const who = { slack: "your Slack account", teams: "your Teams account", api: "your API identity" }[principal.issuer];
  throw new ToolError(
    `refused: ${who} is not mapped to a Power BI user, and the semantic model is only queried as the asking user ` +
      `(its row-level security applies to them); an administrator can map you in POWERBI_IDENTITY_MAP under "${key}"`,
    "query_semantic_model",
  );
}
