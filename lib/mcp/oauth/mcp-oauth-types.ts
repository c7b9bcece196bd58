import type { Principal } from "../../auth/principal.js";

/**
 * What the OAuth side needs of an MCP server entry whose auth is per-user OAuth: the shape of the
 * `mcp` branch's `McpOAuthServerEntry` (lib/mcp/mcp-oauth-provider.ts) as far as these modules read it.
 */
export interface McpOAuthServer {
  name: string;
  transport: { kind: "streamable-http"; url: string } | { kind: "stdio" };
  auth: { kind: "oauth"; scopes?: string[]; clientId?: string; clientSecretName?: string };
}

/** Which tenant's entry a provider is for (the `mcp` branch's `McpServerScope`): tokens are kept per tenant, server and user. */
export interface McpOAuthScope {
  tenant: string | null;
  server: McpOAuthServer;
}

/** A sign-in started and not yet finished: what the callback needs to finish it, bound to its `state`. */
export interface PendingSignIn {
  principal: Principal;
  tenant: string | null;
  server: { name: string; url: string; scopes?: string[]; clientId?: string; clientSecretName?: string };
  codeVerifier: string;
  expiresAt: Date;
}
