import type { OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import type { Principal } from "../auth/principal.js";
import type { McpOAuthAuth, McpServerEntry } from "../config/mcp-servers-config.js";

/** A server entry whose auth is per-user OAuth. */
export type McpOAuthServerEntry = McpServerEntry & { auth: McpOAuthAuth };

/** Which tenant's entry a provider is for: tokens are stored per (tenant, server, user). */
export interface McpServerScope {
  /** The tenant whose entry this is (the caller's `principal.tenant`); null for a configuration default used without one. */
  tenant: string | null;
  server: McpOAuthServerEntry;
}

/**
 * The SDK's `OAuthClientProvider` for one user and one server, plus the link the user opens to
 * sign in. The MCP client hands it to `StreamableHTTPClientTransport` as `authProvider`; the SDK
 * runs discovery (protected-resource metadata), PKCE and refresh through it. When a call needs
 * sign-in the SDK calls `redirectToAuthorization(url)` and the transport throws `UnauthorizedError`;
 * the client then asks `authorizationUrl()` and returns a tool result telling the user to sign in
 * there (a successful tool result, not a failed turn).
 */
export interface McpOAuthClientProvider extends OAuthClientProvider {
  /**
   * The link to post to the user: what the provider recorded at the last `redirectToAuthorization`
   * (or a product URL that leads there). Undefined when no sign-in was started.
   */
  authorizationUrl(): URL | string | undefined;
  /**
   * Finishes a sign-in held for this user on this server when `code` is the one the callback showed
   * (docs/mcp-oauth.md, "Whose sign-in"). Absent: sign-ins finish at the callback.
   */
  confirmSignIn?(code: string): Promise<"confirmed" | "none_waiting" | "wrong_code">;
}

/**
 * Builds the provider for `principal` on one server (implemented with the per-user token store in
 * lib/mcp/oauth/). Called per tool call and per discovery: a provider never serves another
 * principal, so one user's token is never sent for another.
 */
export type McpOAuthProviderFactory = (principal: Principal, scope: McpServerScope) => McpOAuthClientProvider | Promise<McpOAuthClientProvider>;
