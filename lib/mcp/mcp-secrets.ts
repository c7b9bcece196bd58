import type { IssuerKind } from "../auth/principal.js";
import type { SecretSource } from "../tools/secrets.js";

/** Every MCP credential's key starts with this; the deployment's own keys (`mongodbUri`, `slackBotToken`, …) never do. */
export const MCP_SECRET_PREFIX = "mcp/";

/**
 * Whose entry names the secret: the deployment's (`MCP_SERVERS`, set by the operator) or a
 * tenant's (`/v1/admin/mcp-servers`). Each reads its own keys only (docs/mcp.md, "Credentials").
 */
export type McpSecretOwner = { kind: "deployment" } | { kind: "tenant"; issuer: IssuerKind; tenant: string | null };

/**
 * The key an entry's `secretName` (or `clientSecretName`) is read under: `mcp/<name>` for the
 * deployment's entries, `mcp/<issuer>/<tenant>/<name>` for a tenant's (tenant URI-encoded, empty
 * for API users without one). A name is one segment (`MCP_SECRET_NAME_PATTERN`), so no name of one
 * owner is another owner's key, and no key is outside `mcp/`.
 */
export function mcpSecretKey(owner: McpSecretOwner, name: string): string {
  if (owner.kind === "deployment") return `${MCP_SECRET_PREFIX}${name}`;
  return `${MCP_SECRET_PREFIX}${owner.issuer}/${owner.tenant === null ? "" : encodeURIComponent(owner.tenant)}/${name}`;
}

/**
 * The app's secret source as the MCP client sees it: keys under `mcp/` only. Whatever name reaches
 * it, the deployment's own credentials (the database URI, the channels' tokens, Power BI's secret)
 * are not read.
 */
export function mcpSecretSource(source: SecretSource): SecretSource {
  return { get: async (key) => (key.startsWith(MCP_SECRET_PREFIX) ? source.get(key) : undefined) };
}
