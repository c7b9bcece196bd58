import { createHash, randomBytes } from "node:crypto";
import type { OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import type { Principal } from "../../auth/principal.js";
import type { Clock } from "../../clock.js";
import type { SecretSource } from "../../tools/secrets.js";
import type { EnvelopeCipher } from "./envelope-cipher.js";
import { tokenKey, type McpOAuthStore } from "./mcp-oauth-store.js";
import type { PendingSignIn } from "./mcp-oauth-types.js";

/** What every provider of a container shares: the store, the cipher, the callback URL and the timings. */
export interface McpOAuthProviderContext {
  store: McpOAuthStore;
  cipher: EnvelopeCipher;
  /** `GET /v1/mcp/oauth/callback` on the API, as the authorization server redirects the user's browser to it. */
  redirectUrl: () => string;
  clock: Clock;
  /** How long a sign-in link works, in milliseconds. */
  signInTtlMs: number;
  /** How long tokens not used are kept, in milliseconds (the conversations' retention). */
  retentionMs: number;
  /** Where a configured client's secret is read (`clientSecretName`). Default: none (public clients only). */
  secrets?: SecretSource;
  /** Told when a principal's sign-in is complete (its tokens confirmed and stored), for the audit log; never the tokens. Default: none. */
  onSignedIn?: (signIn: McpSignedIn) => Promise<void>;
}

/** A completed MCP sign-in: who, for which tenant's entry, at which server. */
export interface McpSignedIn {
  principal: Principal;
  tenant: string | null;
  server: string;
}

/** Wrong confirmation codes a held sign-in takes before it is dropped (the user then signs in again). */
export const MAX_CONFIRM_ATTEMPTS = 5;
/** The confirmation code's alphabet: no 0/O, 1/I/L, so it reads and types back without mistakes. */
const CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789";

/** A new confirmation code: 8 characters of 31 (about 2^39), shown as `XXXX-XXXX`. */
export function newConfirmationCode(): string {
  const chars = [...randomBytes(8)].map((b) => CODE_ALPHABET[b % CODE_ALPHABET.length]).join("");
  return `${chars.slice(0, 4)}-${chars.slice(4)}`;
}

/** The hash a code is kept under: case, spaces and dashes do not matter. */
export function confirmationCodeHash(code: string): string {
  return createHash("sha256").update(code.toUpperCase().replace(/[\s-]/g, "")).digest("hex");
}

/** The associated data of held tokens: not the token key, so held tokens copied into the principal's record do not open. */
export function heldAssociatedData(key: string): string {
  return `held:${key}`;
}

/** The server as a provider knows it: what a pending sign-in records, so the callback needs no configuration lookup. */
export type ProviderServer = PendingSignIn["server"];

/**
 * The MCP SDK's `OAuthClientProvider` for one principal and one server of one tenant's entry. The
 * SDK's `auth()` drives it: protected-resource and authorization-server metadata, dynamic client
 * registration (unless a client id is configured), authorization code with PKCE, refresh. Tokens
 * are read and written under one key (principal, entry's tenant, server name and URL), sealed with
 * that key as associated data; nothing here ever reads another principal's, or sends a server
 * tokens issued for another URL.
 */
export class McpOAuthProvider implements OAuthClientProvider {
  readonly #key: string;
  readonly #hold: boolean;
  #held: OAuthTokens | undefined;
  #state: string | undefined;
  #codeVerifier: string | undefined;
  #authorizationUrl: URL | undefined;

  constructor(
    private readonly context: McpOAuthProviderContext,
    readonly principal: Principal,
    readonly tenant: string | null,
    readonly server: ProviderServer,
    /** The verifier of the sign-in being finished (the callback); otherwise the SDK saves a fresh one. */
    codeVerifier?: string,
    /** The callback's provider: tokens the code exchange gives are kept in memory (`heldTokens`), not stored for the principal. Default: false. */
    hold?: boolean,
  ) {
    this.#key = tokenKey(principal, tenant, server.name, server.url);
    this.#codeVerifier = codeVerifier;
    this.#hold = hold ?? false;
  }

  /** With `hold`: the tokens the code exchange gave, to be held until the principal confirms. */
  heldTokens(): OAuthTokens | undefined {
    return this.#held;
  }

  /**
   * Finishes a sign-in held for this principal on this server (URL included) when `code` is the one
   * shown in the browser that finished it: the tokens become this principal's. A wrong code counts
   * against the held sign-in (dropped at `MAX_CONFIRM_ATTEMPTS`); another principal's held sign-in
   * is never found, since its key is theirs.
   */
  async confirmSignIn(code: string): Promise<"confirmed" | "none_waiting" | "wrong_code"> {
    const held = await this.context.store.loadHeld(this.#key);
    if (!held || held.expiresAt.getTime() <= this.context.clock.now().getTime()) return "none_waiting";
    const taken = await this.context.store.takeHeld(this.#key, confirmationCodeHash(code));
    if (!taken) {
      await this.context.store.failHeld(this.#key, MAX_CONFIRM_ATTEMPTS);
      return "wrong_code";
    }
    const tokens = JSON.parse(await this.context.cipher.open(taken.sealed, heldAssociatedData(this.#key))) as OAuthTokens;
    await this.saveTokens(tokens, true);
    await this.context.onSignedIn?.({ principal: this.principal, tenant: this.tenant, server: this.server.name });
    return "confirmed";
  }

  get redirectUrl(): string {
    return this.context.redirectUrl();
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: "Threadwise",
      redirect_uris: [this.context.redirectUrl()],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
      ...(this.server.scopes?.length ? { scope: this.server.scopes.join(" ") } : {}),
    };
  }

  /** 32 random bytes; the pending sign-in is stored under its hash when the SDK hands over the link. */
  state(): string {
    this.#state ??= randomBytes(32).toString("base64url");
    return this.#state;
  }

  async clientInformation(): Promise<OAuthClientInformationMixed | undefined> {
    const { clientId, clientSecretName } = this.server;
    if (clientId) {
      const secret = clientSecretName ? await this.context.secrets?.get(clientSecretName) : undefined;
      return { client_id: clientId, ...(secret ? { client_secret: secret } : {}) };
    }
    return this.context.store.loadClient(this.tenant, this.server.name, this.server.url);
  }

  async saveClientInformation(info: OAuthClientInformationMixed): Promise<void> {
    await this.context.store.saveClient(this.tenant, this.server.name, this.server.url, info, this.context.clock.now());
  }

  /** This principal's tokens for this server, or undefined (never signed in, revoked, or sealed under another key). */
  async tokens(): Promise<OAuthTokens | undefined> {
    const doc = await this.context.store.loadTokens(this.#key);
    if (!doc) return undefined;
    let tokens: OAuthTokens;
    try {
      tokens = JSON.parse(await this.context.cipher.open(doc.sealed, this.#key)) as OAuthTokens;
    } catch {
      // Not sealed for this key (copied from another record) or changed: as if none, so the user signs in again.
      return undefined;
    }
    const now = this.context.clock.now();
    await this.context.store.touchTokens(this.#key, new Date(now.getTime() + this.context.retentionMs), this.context.retentionMs / 2);
    return tokens;
  }

  async saveTokens(tokens: OAuthTokens, confirmed = false): Promise<void> {
    if (this.#hold && !confirmed) {
      this.#held = tokens;
      return;
    }
    const now = this.context.clock.now();
    await this.context.store.saveTokens(this.#key, {
      issuer: this.principal.issuer,
      tenant: this.principal.tenant,
      subject: this.principal.subject,
      server: this.server.name,
      url: this.server.url,
      entryTenant: this.tenant,
      sealed: await this.context.cipher.seal(JSON.stringify(tokens), this.#key),
      accessExpiresAt: tokens.expires_in === undefined ? null : new Date(now.getTime() + tokens.expires_in * 1000),
      updatedAt: now,
      retainUntil: new Date(now.getTime() + this.context.retentionMs),
    });
  }

  /**
   * Not a redirect here: the sign-in is stored, bound to the link's `state`, and the link is kept
   * for `authorizationUrl()`, which the MCP client posts to the user.
   */
  async redirectToAuthorization(authorizationUrl: URL): Promise<void> {
    const state = authorizationUrl.searchParams.get("state");
    if (!state || !this.#codeVerifier) throw new Error("the authorization URL has no state or no code verifier was saved");
    const now = this.context.clock.now();
    await this.context.store.savePending(
      state,
      {
        principal: { issuer: this.principal.issuer, tenant: this.principal.tenant, subject: this.principal.subject },
        tenant: this.tenant,
        server: this.server,
        codeVerifier: this.#codeVerifier,
        expiresAt: new Date(now.getTime() + this.context.signInTtlMs),
      },
      now,
    );
    this.#authorizationUrl = authorizationUrl;
  }

  /** The link to post to the user after a sign-in was started; undefined before. */
  authorizationUrl(): URL | undefined {
    return this.#authorizationUrl;
  }

  saveCodeVerifier(codeVerifier: string): void {
    this.#codeVerifier = codeVerifier;
  }

  codeVerifier(): string {
    if (!this.#codeVerifier) throw new Error("no code verifier was saved");
    return this.#codeVerifier;
  }

  /** What the SDK calls when the server or the authorization server refused: revoked tokens are deleted, and the user signs in again. */
  async invalidateCredentials(scope: "all" | "client" | "tokens" | "verifier" | "discovery"): Promise<void> {
    if (scope === "all" || scope === "tokens") await this.context.store.deleteTokens(this.#key);
    if ((scope === "all" || scope === "client") && !this.server.clientId) {
      await this.context.store.deleteClient(this.tenant, this.server.name, this.server.url);
    }
    if (scope === "all" || scope === "verifier") this.#codeVerifier = undefined;
  }
}
