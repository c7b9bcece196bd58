import { createHash } from "node:crypto";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { Principal } from "../auth/principal.js";
import {
  DEFAULT_MCP_MAX_CONCURRENCY,
  DEFAULT_MCP_MAX_OUTPUT_BYTES,
  DEFAULT_MCP_TIMEOUT_MS,
  isCredentialHeader,
  MCP_SECRET_NAME_PATTERN,
  type McpServerEntry,
} from "../config/mcp-servers-config.js";
import type { SecretSource } from "../tools/secrets.js";
import { egressFetch, McpEgressError, type EgressOptions } from "./egress-fetch.js";
import { mcpSecretKey, mcpSecretSource, type McpSecretOwner } from "./mcp-secrets.js";
import type { McpOAuthClientProvider, McpOAuthProviderFactory, McpOAuthServerEntry } from "./mcp-oauth-provider.js";
import { Semaphore } from "./semaphore.js";
import { ZodJsonSchemaValidator } from "./zod-json-schema-validator.js";

/** The product's name and version as an MCP client tells servers. */
const CLIENT_INFO = { name: "threadwise", version: "1.0.0" };
/** Most open connections a container keeps; the least recently used is closed past it. */
export const DEFAULT_MCP_MAX_CONNECTIONS = 200;

/** Why a server could not be reached: what the model and the logs are told. */
export class McpConnectError extends Error {
  override name = "McpConnectError";
  constructor(
    message: string,
    readonly reason: "missing_secret" | "secret_refused" | "egress_refused" | "stdio_not_allowed" | "unreachable" | "sign_in_required",
    options?: ErrorOptions & { signInUrl?: string },
  ) {
    super(message, options);
    this.signInUrl = options?.signInUrl;
  }

  /** With `sign_in_required`: the link the OAuth provider gave, for the user to open. */
  readonly signInUrl: string | undefined;
}

/** One live connection: the SDK client, its server's concurrency slots, and the OAuth provider it signs with. */
export interface McpConnection {
  key: string;
  client: Client;
  slots: Semaphore;
  /** Set for an `oauth` server: the provider of the one principal this connection serves. */
  oauth?: McpOAuthClientProvider;
  /** The calls in flight: aborted with the error when an answer goes past the response cap (an event stream's failure reaches no call otherwise). */
  inFlight: Set<AbortController>;
}

/** Whose connection: a tenant's entry, and for an `oauth` server the principal it acts for. */
export interface McpConnectionScope {
  tenant: string | null;
  entry: McpServerEntry;
  principal: Principal;
  /**
   * Whether the entry is the deployment's own (`MCP_SERVERS`), whose secrets are `mcp/<name>`;
   * otherwise it is the tenant's (`principal.issuer`, `tenant`), whose secrets are
   * `mcp/<issuer>/<tenant>/<name>`. Default: false (the tenant's).
   */
  deployment?: boolean;
}

/**
 * Most bytes of one response from a server (one event of an event stream): four times the
 * entry's `maxOutputBytes` (JSON escapes and the result's other parts) plus 2 MiB (a tool list, the envelope).
 */
export function maxResponseBytesOf(entry: McpServerEntry): number {
  return 4 * (entry.maxOutputBytes ?? DEFAULT_MCP_MAX_OUTPUT_BYTES) + 2 * 1024 * 1024;
}

/** Whose secrets the scope's entry reads. */
export function secretOwnerOf(scope: McpConnectionScope): McpSecretOwner {
  return scope.deployment ? { kind: "deployment" } : { kind: "tenant", issuer: scope.principal.issuer, tenant: scope.tenant };
}

export interface McpConnectionsOptions {
  /** The app's secrets; only keys under `mcp/` are read (lib/mcp/mcp-secrets.ts). */
  secrets: SecretSource;
  /** Where servers may be reached (docs/mcp.md, "Egress"). Default: public addresses only, the system resolver. */
  egress?: EgressOptions;
  /** Builds the per-user OAuth provider of an `oauth` server; without it such a server is unreachable. */
  oauth?: McpOAuthProviderFactory;
  /** Whether stdio servers may run (local mode only; never in Lambda). Default: false. */
  allowStdio?: boolean;
  /** Default: `DEFAULT_MCP_MAX_CONNECTIONS`. */
  maxConnections?: number;
}

/** Whether the entry's connection acts for one user (and so is never shared). */
export function perUser(entry: McpServerEntry): boolean {
  return entry.auth?.kind === "oauth";
}

/** What identifies a connection: the entry as configured (a change reconnects) and, for per-user auth, the principal. */
export function connectionKey(scope: McpConnectionScope): string {
  const entryHash = createHash("sha256").update(JSON.stringify(scope.entry)).digest("base64url").slice(0, 16);
  const who = perUser(scope.entry) ? [scope.principal.issuer, scope.principal.tenant, scope.principal.subject] : [];
  return JSON.stringify([scope.principal.issuer, scope.tenant, scope.deployment === true, scope.entry.name, entryHash, ...who]);
}

/**
 * The container's MCP connections, one per (tenant, entry) and for `oauth` servers per user,
 * opened on first use and kept (a Streamable HTTP connection is a session id; stdio a process).
 * A connection that failed is dropped, so the next use reconnects.
 */
export class McpConnections {
  readonly #open = new Map<string, Promise<McpConnection>>();
  readonly #options: McpConnectionsOptions;
  readonly #secrets: SecretSource;

  constructor(options: McpConnectionsOptions) {
    this.#options = options;
    this.#secrets = mcpSecretSource(options.secrets);
  }

  /** The scope's connection, opened (initialize handshake) when there is none. */
  async get(scope: McpConnectionScope): Promise<McpConnection> {
    const key = connectionKey(scope);
    const existing = this.#open.get(key);
    if (existing) {
      // Most recently used last, so the first is the one to close.
      this.#open.delete(key);
      this.#open.set(key, existing);
      return existing;
    }
    const opening = this.#connect(key, scope);
    this.#open.set(key, opening);
    opening.catch(() => {
      if (this.#open.get(key) === opening) this.#open.delete(key);
    });
    await this.#evict();
    return opening;
  }

  /** Closes and forgets a connection (after a transport failure, so the next call reconnects). */
  async drop(connection: McpConnection): Promise<void> {
    const current = this.#open.get(connection.key);
    if (current && (await current.catch(() => undefined)) === connection) this.#open.delete(connection.key);
    await connection.client.close().catch(() => undefined);
  }

  /** Gives a sign-in confirmation code for the scope's user (an `oauth` entry); see `McpOAuthClientProvider.confirmSignIn`. */
  async confirmSignIn(scope: McpConnectionScope, code: string): Promise<"confirmed" | "none_waiting" | "wrong_code"> {
    if (scope.entry.auth?.kind !== "oauth" || !this.#options.oauth) return "none_waiting";
    const provider = await this.#options.oauth(scope.principal, this.#oauthScope(scope));
    return provider.confirmSignIn ? provider.confirmSignIn(code) : "none_waiting";
  }

  async close(): Promise<void> {
    const all = [...this.#open.values()];
    this.#open.clear();
    await Promise.all(all.map(async (c) => (await c.catch(() => undefined))?.client.close().catch(() => undefined)));
  }

  async #evict(): Promise<void> {
    const max = this.#options.maxConnections ?? DEFAULT_MCP_MAX_CONNECTIONS;
    while (this.#open.size > max) {
      const [key, oldest] = this.#open.entries().next().value as [string, Promise<McpConnection>];
      this.#open.delete(key);
      void oldest.then((c) => c.client.close()).catch(() => undefined);
    }
  }

  async #connect(key: string, scope: McpConnectionScope): Promise<McpConnection> {
    const { entry } = scope;
    const oauth = entry.auth?.kind === "oauth" && this.#options.oauth ? await this.#options.oauth(scope.principal, this.#oauthScope(scope)) : undefined;
    if (entry.auth?.kind === "oauth" && !oauth) {
      throw new McpConnectError(`${entry.name} needs per-user sign-in, which this deployment does not offer`, "unreachable");
    }
    const inFlight = new Set<AbortController>();
    const transport = await this.#transport(scope, oauth, (error) => {
      for (const call of inFlight) call.abort(error);
    });
    const client = new Client(CLIENT_INFO, { capabilities: {}, jsonSchemaValidator: new ZodJsonSchemaValidator() });
    const slots = new Semaphore(entry.maxConcurrency ?? DEFAULT_MCP_MAX_CONCURRENCY);
    // The handshake may hit 401 (sign-in needed); the caller tells that apart by the error's class.
    try {
      await client.connect(transport, { timeout: entry.timeoutMs ?? DEFAULT_MCP_TIMEOUT_MS });
    } catch (error) {
      await client.close().catch(() => undefined);
      if (error instanceof UnauthorizedError && oauth) {
        const url = oauth.authorizationUrl();
        throw new McpConnectError(`${entry.name} needs the user to sign in`, "sign_in_required", {
          cause: error,
          ...(url !== undefined && { signInUrl: String(url) }),
        });
      }
      const egress = egressErrorOf(error);
      if (egress) throw new McpConnectError(`${entry.name} was not reached: ${egress.message}`, "egress_refused", { cause: error });
      throw error;
    }
    return { key, client, slots, inFlight, ...(oauth && { oauth }) };
  }

  /** The factory's scope: the entry with its client secret's name turned into its owner's key (`mcp/…`). */
  #oauthScope(scope: McpConnectionScope): { tenant: string | null; server: McpOAuthServerEntry } {
    const server = scope.entry as McpOAuthServerEntry;
    const name = server.auth.clientSecretName;
    if (name === undefined) return { tenant: scope.tenant, server };
    if (!MCP_SECRET_NAME_PATTERN.test(name)) {
      throw new McpConnectError(`${server.name}'s client secret name (${name}) is not one segment`, "secret_refused");
    }
    return { tenant: scope.tenant, server: { ...server, auth: { ...server.auth, clientSecretName: mcpSecretKey(secretOwnerOf(scope), name) } } };
  }

  async #transport(
    scope: McpConnectionScope,
    oauth: McpOAuthClientProvider | undefined,
    onResponseTooLarge: (error: McpEgressError) => void,
  ): Promise<Transport> {
    const { entry } = scope;
    const { transport } = entry;
    if (transport.kind === "stdio") {
      if (!this.#options.allowStdio) throw new McpConnectError(`${entry.name} is a stdio server, which only local mode runs`, "stdio_not_allowed");
      // Loaded only here, so the Lambda bundles never carry the process spawner (docs/bundling.md).
      const specifier = "@modelcontextprotocol/sdk/client/stdio.js";
      const stdio = (await import(/* @vite-ignore */ specifier)) as typeof import("@modelcontextprotocol/sdk/client/stdio.js");
      return new stdio.StdioClientTransport({
        command: transport.command,
        args: transport.args ?? [],
        env: { ...stdio.getDefaultEnvironment(), ...transport.env },
        stderr: "ignore",
      });
    }
    const headers: Record<string, string> = {};
    if (entry.auth?.kind === "static") {
      const { secretName } = entry.auth;
      const header = entry.auth.header ?? "Authorization";
      // Checked again here: an entry stored before these rules, or one not read through the schema.
      if (!MCP_SECRET_NAME_PATTERN.test(secretName) || !isCredentialHeader(header)) {
        throw new McpConnectError(`${entry.name}'s credential (${secretName} in ${header}) is not a secret name and header it may use`, "secret_refused");
      }
      const key = mcpSecretKey(secretOwnerOf(scope), secretName);
      const secret = await this.#secrets.get(key);
      if (!secret) throw new McpConnectError(`${entry.name}'s credential (${key}) is not set`, "missing_secret");
      const scheme = entry.auth.scheme ?? "Bearer";
      headers[header] = scheme === "" ? secret : `${scheme} ${secret}`;
    }
    return new StreamableHTTPClientTransport(new URL(transport.url), {
      requestInit: { headers },
      fetch: egressFetch({ ...this.#options.egress, maxResponseBytes: maxResponseBytesOf(entry), onResponseTooLarge }),
      ...(oauth && { authProvider: oauth }),
    });
  }
}

/** The egress refusal behind `error` (itself or a cause), if any. */
export function egressErrorOf(error: unknown): McpEgressError | undefined {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof McpEgressError) return e;
  }
  return undefined;
}
