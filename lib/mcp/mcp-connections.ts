import { createHash } from "node:crypto";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { Principal } from "../auth/principal.js";
import { DEFAULT_MCP_MAX_CONCURRENCY, DEFAULT_MCP_TIMEOUT_MS, type McpServerEntry } from "../config/mcp-servers-config.js";
import type { SecretSource } from "../tools/secrets.js";
import type { McpOAuthClientProvider, McpOAuthProviderFactory, McpOAuthServerEntry } from "./mcp-server-config.js";
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
    readonly reason: "missing_secret" | "stdio_not_allowed" | "unreachable" | "sign_in_required",
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
}

/** Whose connection: a tenant's entry, and for an `oauth` server the principal it acts for. */
export interface McpConnectionScope {
  tenant: string | null;
  entry: McpServerEntry;
  principal: Principal;
}

export interface McpConnectionsOptions {
  secrets: SecretSource;
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
  return JSON.stringify([scope.principal.issuer, scope.tenant, scope.entry.name, entryHash, ...who]);
}

/**
 * The container's MCP connections, one per (tenant, entry) and for `oauth` servers per user,
 * opened on first use and kept (a Streamable HTTP connection is a session id; stdio a process).
 * A connection that failed is dropped, so the next use reconnects.
 */
export class McpConnections {
  readonly #open = new Map<string, Promise<McpConnection>>();
  readonly #options: McpConnectionsOptions;

  constructor(options: McpConnectionsOptions) {
    this.#options = options;
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
    const oauth =
      entry.auth?.kind === "oauth" && this.#options.oauth
        ? await this.#options.oauth(scope.principal, { tenant: scope.tenant, server: entry as McpOAuthServerEntry })
        : undefined;
    if (entry.auth?.kind === "oauth" && !oauth) {
      throw new McpConnectError(`${entry.name} needs per-user sign-in, which this deployment does not offer`, "unreachable");
    }
    const transport = await this.#transport(entry, oauth);
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
      throw error;
    }
    return { key, client, slots, ...(oauth && { oauth }) };
  }

  async #transport(entry: McpServerEntry, oauth: McpOAuthClientProvider | undefined): Promise<Transport> {
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
      const secret = await this.#options.secrets.get(entry.auth.secretName);
      if (!secret) throw new McpConnectError(`${entry.name}'s credential (${entry.auth.secretName}) is not set`, "missing_secret");
      const scheme = entry.auth.scheme ?? "Bearer";
      headers[entry.auth.header ?? "Authorization"] = scheme === "" ? secret : `${scheme} ${secret}`;
    }
    return new StreamableHTTPClientTransport(new URL(transport.url), { requestInit: { headers }, ...(oauth && { authProvider: oauth }) });
  }
}
