import { auth } from "@modelcontextprotocol/sdk/client/auth.js";
import type { Db } from "mongodb";
import type { Principal } from "../../auth/principal.js";
import { systemClock, type Clock } from "../../clock.js";
import { McpSignInError } from "../../errors.js";
import type { StructuredLogger as Logger } from "../../logger.js";
import type { SecretSource } from "../../tools/secrets.js";
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";
import { DEFAULT_OAUTH_RESPONSE_BYTES, egressFetch, type EgressOptions } from "../egress-fetch.js";
import { mcpSecretSource } from "../mcp-secrets.js";
import type { DataKeySource } from "./data-key-source.js";
import { EnvelopeCipher } from "./envelope-cipher.js";
import { McpOAuthProvider, type McpOAuthProviderContext, type ProviderServer } from "./mcp-oauth-provider.js";
import { confirmationCodeHash, heldAssociatedData, newConfirmationCode } from "./mcp-oauth-provider.js";
import { McpOAuthStore, tokenKey } from "./mcp-oauth-store.js";
import type { McpOAuthScope } from "./mcp-oauth-types.js";

/** How long a sign-in link works: ten minutes, as authorization codes usually do. */
export const DEFAULT_MCP_SIGN_IN_TTL_MS = 10 * 60_000;

export interface McpOAuthOptions {
  db: Db;
  /** Data keys: KMS in AWS (`KmsDataKeySource`), the local key file in local mode (`LocalDataKeySource`). */
  keys: DataKeySource;
  /** The API's `GET /v1/mcp/oauth/callback`, absolute, as registered with each authorization server (a function: the local server knows its port late). */
  redirectUrl: string | (() => string);
  /** How long tokens not used are kept, in milliseconds: the conversations' retention period. */
  retentionMs: number;
  /** Default: {@link DEFAULT_MCP_SIGN_IN_TTL_MS}. */
  signInTtlMs?: number;
  /** Default: the system clock. */
  clock?: Clock;
  /** Where a configured client's secret is read (keys under `mcp/` only). Default: none (public clients). */
  secrets?: SecretSource;
  /** Where authorization servers may be reached when a sign-in is finished (docs/mcp.md, "Egress"). Default: public addresses only. */
  egress?: EgressOptions;
  logger?: Logger;
  /** Told when a principal's sign-in is complete (the audit log's `sign_in.mcp`). Default: none. */
  onSignedIn?: McpOAuthProviderContext["onSignedIn"];
}

/** The query of the callback, as the authorization server sends it (RFC 6749 4.1.2). */
export interface SignInCallback {
  state: string;
  code?: string;
  error?: string;
}

/**
 * Per-user OAuth for MCP servers (docs/mcp-oauth.md): a provider per principal and server for the
 * MCP client (`providerFor`, the `McpOAuthProviderFactory` of lib/mcp/mcp-oauth-provider.ts), the
 * callback that finishes a sign-in (`complete`), and the deletions (`revoke`, `deleteUserData`).
 */
export class McpOAuth {
  readonly store: McpOAuthStore;
  readonly #context: ConstructorParameters<typeof McpOAuthProvider>[0];
  readonly #logger?: Logger;
  readonly #fetch: FetchLike;

  constructor(options: McpOAuthOptions) {
    this.store = new McpOAuthStore(options.db);
    const { redirectUrl } = options;
    this.#logger = options.logger;
    this.#context = {
      store: this.store,
      cipher: new EnvelopeCipher(options.keys),
      redirectUrl: typeof redirectUrl === "string" ? () => redirectUrl : redirectUrl,
      clock: options.clock ?? systemClock,
      signInTtlMs: options.signInTtlMs ?? DEFAULT_MCP_SIGN_IN_TTL_MS,
      retentionMs: options.retentionMs,
      secrets: options.secrets && mcpSecretSource(options.secrets),
      onSignedIn: options.onSignedIn,
    };
    this.#fetch = egressFetch({ ...options.egress, maxResponseBytes: DEFAULT_OAUTH_RESPONSE_BYTES });
  }

  /** A new provider for this principal on this server; it serves that principal only (the factory the MCP client calls per use). */
  providerFor(principal: Principal, scope: McpOAuthScope): McpOAuthProvider {
    const { server } = scope;
    if (server.transport.kind !== "streamable-http") throw new Error(`MCP server ${server.name}: OAuth needs a Streamable HTTP server`);
    const { scopes, clientId, clientSecretName } = server.auth;
    const known: ProviderServer = { name: server.name, url: server.transport.url, scopes, clientId, clientSecretName };
    return new McpOAuthProvider(this.#context, principal, scope.tenant, known);
  }

  /**
   * Finishes the browser's part of the sign-in bound to `state`: taken once (a replay finds
   * nothing), refused when past its time, then the code exchanged with PKCE through the SDK's
   * `auth()`. The tokens are not yet the principal's: they are held, sealed, under a confirmation
   * code returned here (shown to whoever opened the link), until the principal who started the
   * sign-in gives that code in their own conversation (`McpOAuthProvider.confirmSignIn`, the
   * `<server>__sign_in` tool). Someone else who opens the link signs in for nobody.
   */
  async complete(callback: SignInCallback): Promise<{ server: string; principal: Principal; code: string }> {
    const pending = await this.store.takePending(callback.state);
    if (!pending) throw new McpSignInError("this sign-in link is unknown or was already used", "sign_in_unknown");
    const now = this.#context.clock.now();
    if (pending.expiresAt.getTime() <= now.getTime()) throw new McpSignInError("this sign-in link has expired; ask again for a new one", "sign_in_expired");
    if (callback.error !== undefined || callback.code === undefined) {
      throw new McpSignInError(`the sign-in to ${pending.server.name} was not granted`, "sign_in_denied");
    }
    const provider = new McpOAuthProvider(this.#context, pending.principal, pending.tenant, pending.server, pending.codeVerifier, true);
    try {
      const result = await auth(provider, {
        serverUrl: pending.server.url,
        authorizationCode: callback.code,
        scope: pending.server.scopes?.join(" "),
        fetchFn: this.#fetch,
      });
      if (result !== "AUTHORIZED" || !provider.heldTokens()) throw new Error("the authorization server did not issue tokens");
    } catch (error) {
      this.#logger?.warn("mcp sign-in failed", { error: error instanceof Error ? error.name : "unknown" });
      throw new McpSignInError(`the sign-in to ${pending.server.name} could not be finished`, "sign_in_failed", { cause: error });
    }
    const code = newConfirmationCode();
    const key = tokenKey(pending.principal, pending.tenant, pending.server.name, pending.server.url);
    await this.store.saveHeld(key, {
      principal: pending.principal,
      tenant: pending.tenant,
      server: pending.server,
      sealed: await this.#context.cipher.seal(JSON.stringify(provider.heldTokens()), heldAssociatedData(key)),
      codeHash: confirmationCodeHash(code),
      attempts: 0,
      expiresAt: new Date(now.getTime() + this.#context.signInTtlMs),
    });
    this.#logger?.info("mcp sign-in awaiting confirmation", { issuer: pending.principal.issuer });
    return { server: pending.server.name, principal: pending.principal, code };
  }

  /** Signs a principal out of one server (whatever URLs it had): its tokens are deleted; the next use asks for a sign-in again. */
  async revoke(principal: Principal, tenant: string | null, server: string): Promise<boolean> {
    return (await this.store.deleteServerTokens(principal, tenant, server)) > 0;
  }

  /** Deletes everything kept for a principal (every server's tokens, pending sign-ins): part of deleting the user's data. */
  async deleteUserData(principal: Principal): Promise<number> {
    return this.store.deleteAllOf(principal);
  }
}
