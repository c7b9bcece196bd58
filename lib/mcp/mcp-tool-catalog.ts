import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { ErrorCode, McpError, type CallToolResult, type Tool } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { Caller } from "../auth/principal.js";
import { ByteBoundedMap } from "../byte-bounded-map.js";
import type { ToolApprovalPolicy } from "../config/approvals-config.js";
import {
  DEFAULT_MCP_DESCRIPTION_MAX_CHARS,
  DEFAULT_MCP_MAX_OUTPUT_BYTES,
  DEFAULT_MCP_TIMEOUT_MS,
  MCP_TOOL_NAME_SEPARATOR,
  type McpConfig,
  type McpServerEntry,
} from "../config/mcp-servers-config.js";
import { ToolError } from "../errors.js";
import type { ToolDefinition } from "../tools/tool.js";
import type { ToolLogger } from "../tools/tool-registry.js";
import {
  connectionKey,
  egressErrorOf,
  maxResponseBytesOf,
  McpConnectError,
  type McpConnection,
  type McpConnections,
  type McpConnectionScope,
  perUser,
} from "./mcp-connections.js";

/** Longest tool name Bedrock accepts (`^[a-zA-Z0-9_-]{1,64}$`). */
const MAX_TOOL_NAME_CHARS = 64;
const TOOL_NAME = /^[A-Za-z0-9_-]+$/;
/** A failed discovery is tried again after this, at most (a down server does not slow every turn). */
const FAILED_DISCOVERY_RETRY_MS = 30_000;
/**
 * Most bytes of discovered tool lists a container keeps. One server's list is at most
 * `MCP_MAX_TOOLS_PER_SERVER` (64) tools of at most `MCP_MAX_SCHEMA_BYTES` (8 KB) schemas and
 * 1,000-character descriptions, about 1.2 MB as estimated at worst, while server-everything's 13
 * tools weigh about 15 KB; 8 MB keeps several worst-case lists, or hundreds of common ones (per user
 * for `oauth` servers), whatever the number of tenants. The least recently used list is listed again.
 */
export const DEFAULT_MCP_DISCOVERY_CACHE_BYTES = 8 * 1024 * 1024;
/**
 * Most `tools/list` pages one discovery reads: a server still answering `nextCursor` past them
 * (empty pages, or a handful of tools each) offers none.
 */
export const DEFAULT_MCP_MAX_TOOL_LIST_PAGES = 16;
/** Longest one discovery's pages may take together, in milliseconds (each page also has the entry's `timeoutMs`). */
export const DEFAULT_MCP_DISCOVERY_TIMEOUT_MS = 30_000;
/** The tool offered in place of an `oauth` server's tools while its user has not signed in. */
export const MCP_SIGN_IN_TOOL = "sign_in";

/** What the metrics and logs get of one MCP call or discovery: numbers and names, never arguments or outputs. */
export interface McpCallEvent {
  kind: "call" | "discovery";
  server: string;
  /** The server's tool name (calls only). */
  tool?: string;
  outcome: "success" | "tool_error" | "timeout" | "unreachable" | "sign_in_required" | "refused";
  durationMs: number;
  outputBytes?: number;
  truncated?: boolean;
  /** Discovery: tools offered. */
  tools?: number;
}

/** A tool the server listed, checked and ready to offer. */
interface OfferedTool {
  name: string;
  serverTool: string;
  description: string;
  parameters: Record<string, unknown>;
  readOnly: boolean;
  destructive: boolean;
}

type Discovery =
  | { at: number; state: "ready"; tools: OfferedTool[] }
  | { at: number; state: "sign_in"; url: string | undefined }
  | { at: number; state: "failed"; reason: string };

/** Estimated bytes of a cached discovery: key and what it holds as JSON, UTF-16, plus the objects' overhead (per tool, and for the entry). */
function discoveryBytes(key: string, discovery: Discovery): number {
  const held = discovery.state === "ready" ? JSON.stringify(discovery.tools).length + 128 * discovery.tools.length : JSON.stringify(discovery).length;
  return 2 * (key.length + held) + 96;
}

export interface McpToolCatalogOptions {
  connections: McpConnections;
  config: Pick<McpConfig, "toolsTtlSeconds" | "maxToolsPerServer" | "maxSchemaBytes">;
  logger?: ToolLogger;
  /** Receives each call's and discovery's outcome (Lambda: metrics). Default: none. */
  onEvent?: (event: McpCallEvent) => void;
  /** Whether an entry is the deployment's own (`MCP_SERVERS`), which reads the deployment's MCP secrets. Default: none is. */
  isDeploymentEntry?: (entry: McpServerEntry) => boolean;
  /** Default: `DEFAULT_MCP_MAX_TOOL_LIST_PAGES`. */
  maxToolListPages?: number;
  /** Default: `DEFAULT_MCP_DISCOVERY_TIMEOUT_MS`. */
  discoveryTimeoutMs?: number;
  /**
   * Most bytes of cached discoveries (estimated); the least recently used is dropped past it, and
   * listed again on next use. Default: `DEFAULT_MCP_DISCOVERY_CACHE_BYTES`.
   */
  discoveryCacheBytes?: number;
  now?: () => number;
}

/** What a tenant's MCP servers add for one caller: the tools, and the approval policy of each that changes things. */
export interface McpToolSet {
  tools: ToolDefinition[];
  approvals: Record<string, ToolApprovalPolicy>;
  /** Identifies the set (the servers' entries and discoveries): equal keys, equal tools. */
  key: string;
}

const anyArguments = z.record(z.string(), z.unknown());
const signInArguments = z.object({ code: z.string().min(1).max(32).optional() });

/** A description as the model sees it: one line, control characters out, at most `max` characters, and marked as the server's. */
export function cappedDescription(server: string, text: string | undefined, max: number): string {
  const flat = (text ?? "")
    .replace(/[\p{Cc}\p{Cf}]+/gu, " ")
    .replace(/\s+/g, " ")
    .trim();
  const cut = flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
  return `[${server} MCP server] ${cut}`;
}

/** The result's text for the model: text parts as they are, other parts named, cut at `maxBytes`. */
export function resultText(result: CallToolResult, maxBytes: number): { text: string; bytes: number; truncated: boolean } {
  const parts = result.content.map((part) => {
    switch (part.type) {
      case "text":
        return part.text;
      case "resource":
        return "text" in part.resource ? part.resource.text : `[resource ${part.resource.uri}: ${part.resource.mimeType ?? "binary"}, not shown]`;
      case "resource_link":
        return `[resource ${part.uri}]`;
      default:
        return `[${part.type} ${"mimeType" in part ? part.mimeType : ""}, not shown]`;
    }
  });
  if (parts.length === 0 && result.structuredContent) parts.push(JSON.stringify(result.structuredContent));
  const full = Buffer.from(parts.join("\n"), "utf8");
  if (full.length <= maxBytes) return { text: full.toString("utf8"), bytes: full.length, truncated: false };
  const kept = full
    .subarray(0, maxBytes)
    .toString("utf8")
    .replace(/\uFFFD$/, "");
  return { text: `${kept}\n[output cut: the first ${maxBytes} of ${full.length} bytes]`, bytes: full.length, truncated: true };
}

/**
 * The tools of MCP servers, per tenant and caller: each server's `tools/list` cached per container
 * for `toolsTtlSeconds` (per user for `oauth` servers), checked (names, schema type and size, list
 * size) and namespaced `<server>__<tool>`, colliding names refused; the cache is bounded by bytes
 * (`discoveryCacheBytes`), least recently used first. A call runs over the
 * container's connection within the server's concurrency and time limits; a server that is down,
 * slow or refuses gives the model a tool error, and a sign-in it needs gives the user a link.
 */
export class McpToolCatalog {
  readonly #discoveries: ByteBoundedMap<string, Discovery>;
  readonly #refreshing = new Map<string, Promise<Discovery>>();
  readonly #options: McpToolCatalogOptions;
  readonly #now: () => number;

  constructor(options: McpToolCatalogOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#discoveries = new ByteBoundedMap(options.discoveryCacheBytes ?? DEFAULT_MCP_DISCOVERY_CACHE_BYTES, discoveryBytes);
  }

  /** Bytes the cached discoveries hold (estimated), at most `discoveryCacheBytes`. */
  get cachedBytes(): number {
    return this.#discoveries.bytes;
  }

  /** The caller's tools from the tenant's entries, in entry order then the server's order; names already taken (`reserved`) are refused. */
  async toolSet(caller: Caller, tenant: string | null, entries: readonly McpServerEntry[], reserved: ReadonlySet<string>): Promise<McpToolSet> {
    const deployment = this.#options.isDeploymentEntry ?? (() => false);
    const scopes = entries.map((entry): McpConnectionScope => ({ tenant, entry, principal: caller.principal, deployment: deployment(entry) }));
    const discoveries = await Promise.all(scopes.map((scope) => this.#discovery(scope)));
    const taken = new Set(reserved);
    const tools: ToolDefinition[] = [];
    const approvals: Record<string, ToolApprovalPolicy> = {};
    const keyParts: unknown[] = [];
    scopes.forEach((scope, i) => {
      const discovery = discoveries[i]!;
      keyParts.push([connectionKey(scope), discovery.at]);
      if (discovery.state === "sign_in") {
        const name = `${scope.entry.name}${MCP_TOOL_NAME_SEPARATOR}${MCP_SIGN_IN_TOOL}`;
        if (!taken.has(name)) {
          taken.add(name);
          tools.push(this.#signInTool(scope, name));
        }
        return;
      }
      if (discovery.state !== "ready") return;
      for (const offered of discovery.tools) {
        if (taken.has(offered.name)) {
          this.#options.logger?.warn("mcp tool refused", { server: scope.entry.name, reason: "name_collision" });
          continue;
        }
        taken.add(offered.name);
        const policy = policyOf(scope.entry, offered);
        if (policy) approvals[offered.name] = policy;
        tools.push(this.#tool(scope, offered));
      }
    });
    return { tools, approvals, key: JSON.stringify(keyParts) };
  }

  /** The scope's discovery, from the cache while fresh; a refresh that fails keeps the tools it had. */
  async #discovery(scope: McpConnectionScope): Promise<Discovery> {
    const key = connectionKey(scope);
    const cached = this.#discoveries.get(key);
    const now = this.#now();
    const ttl =
      cached?.state === "ready"
        ? this.#options.config.toolsTtlSeconds * 1000
        : Math.min(this.#options.config.toolsTtlSeconds * 1000, FAILED_DISCOVERY_RETRY_MS);
    if (cached && now - cached.at < ttl) return cached;
    let refresh = this.#refreshing.get(key);
    if (!refresh) {
      refresh = this.#discover(scope).then((fresh) => {
        const kept = fresh.state === "failed" && cached?.state === "ready" ? { ...cached, at: fresh.at } : fresh;
        this.#discoveries.set(key, kept);
        return kept;
      });
      this.#refreshing.set(key, refresh);
      void refresh.finally(() => this.#refreshing.delete(key));
    }
    return refresh;
  }

  async #discover(scope: McpConnectionScope): Promise<Discovery> {
    const { entry } = scope;
    const started = this.#now();
    const event = (outcome: McpCallEvent["outcome"], tools?: number) =>
      this.#options.onEvent?.({ kind: "discovery", server: entry.name, outcome, durationMs: this.#now() - started, ...(tools !== undefined && { tools }) });
    const pageTimeout = entry.timeoutMs ?? DEFAULT_MCP_TIMEOUT_MS;
    const deadline = Date.now() + (this.#options.discoveryTimeoutMs ?? DEFAULT_MCP_DISCOVERY_TIMEOUT_MS);
    const maxPages = this.#options.maxToolListPages ?? DEFAULT_MCP_MAX_TOOL_LIST_PAGES;
    let connection: McpConnection | undefined;
    try {
      connection = await this.#options.connections.get(scope);
      const listed: Tool[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const left = deadline - Date.now();
        if (left <= 0) throw new McpError(ErrorCode.RequestTimeout, "the tool list was not read within the discovery's time");
        if (pages === maxPages) {
          this.#options.logger?.warn("mcp tool list refused", { server: entry.name, reason: "too_many_pages", limit: maxPages });
          event("refused", 0);
          await this.#options.connections.drop(connection);
          return { at: this.#now(), state: "failed", reason: "too_many_pages" };
        }
        const page = await connection.client.listTools(cursor ? { cursor } : undefined, { timeout: Math.min(left, pageTimeout) });
        pages += 1;
        listed.push(...page.tools);
        cursor = page.nextCursor;
      } while (cursor && listed.length <= this.#options.config.maxToolsPerServer);
      if (listed.length > this.#options.config.maxToolsPerServer) {
        this.#options.logger?.warn("mcp tool list refused", { server: entry.name, reason: "too_many_tools", limit: this.#options.config.maxToolsPerServer });
        event("refused", 0);
        return { at: this.#now(), state: "failed", reason: "too_many_tools" };
      }
      const tools = this.#checked(entry, listed);
      this.#options.logger?.info("mcp tools discovered", {
        server: entry.name,
        listed: listed.length,
        offered: tools.length,
        durationMs: this.#now() - started,
      });
      event("success", tools.length);
      return { at: this.#now(), state: "ready", tools };
    } catch (error) {
      if (connection) await this.#options.connections.drop(connection);
      if (error instanceof UnauthorizedError || isSignIn(error)) {
        event("sign_in_required");
        return { at: this.#now(), state: "sign_in", url: error instanceof McpConnectError ? error.signInUrl : undefined };
      }
      const reason = error instanceof McpConnectError ? error.reason : timedOut(error) ? "timeout" : "unreachable";
      this.#options.logger?.warn("mcp discovery failed", { server: entry.name, reason, errorName: error instanceof Error ? error.name : typeof error });
      event(reason === "timeout" ? "timeout" : "unreachable");
      return { at: this.#now(), state: "failed", reason };
    }
  }

  /** The listed tools that pass the checks, namespaced, in the server's order. */
  #checked(entry: McpServerEntry, listed: readonly Tool[]): OfferedTool[] {
    const allowed = entry.tools ? new Set(entry.tools) : undefined;
    const max = entry.descriptionMaxChars ?? DEFAULT_MCP_DESCRIPTION_MAX_CHARS;
    const seen = new Set<string>();
    const out: OfferedTool[] = [];
    for (const tool of listed) {
      if (allowed && !allowed.has(tool.name)) continue;
      const name = `${entry.name}${MCP_TOOL_NAME_SEPARATOR}${tool.name}`;
      const refuse = (reason: string) => this.#options.logger?.warn("mcp tool refused", { server: entry.name, reason });
      if (!TOOL_NAME.test(tool.name) || name.length > MAX_TOOL_NAME_CHARS) {
        refuse("invalid_name");
        continue;
      }
      if (seen.has(name)) {
        refuse("name_collision");
        continue;
      }
      const { $schema: _ignored, ...parameters } = tool.inputSchema as Record<string, unknown>;
      if (parameters.type !== "object") {
        refuse("schema_not_object");
        continue;
      }
      if (Buffer.byteLength(JSON.stringify(parameters), "utf8") > this.#options.config.maxSchemaBytes) {
        refuse("schema_too_large");
        continue;
      }
      seen.add(name);
      out.push({
        name,
        serverTool: tool.name,
        description: cappedDescription(entry.name, tool.description ?? tool.title, max),
        parameters,
        readOnly: tool.annotations?.readOnlyHint === true,
        destructive: tool.annotations?.destructiveHint === true,
      });
    }
    return out;
  }

  #tool(scope: McpConnectionScope, offered: OfferedTool): ToolDefinition<typeof anyArguments> {
    const { entry } = scope;
    const roles = entry.roles?.[offered.serverTool] ?? entry.allowedRoles;
    const timeoutMs = entry.timeoutMs ?? DEFAULT_MCP_TIMEOUT_MS;
    return {
      name: offered.name,
      description: offered.description,
      schema: anyArguments,
      parameters: offered.parameters,
      sideEffects: !offered.readOnly,
      trust: "untrusted",
      timeoutMs,
      ...(roles && { allowedRoles: roles }),
      // Called with the user's own OAuth token: what it returns is that user's.
      ...(perUser(entry) && { readsAsUser: true }),
      run: (input, ctx) => this.#call(scope, offered.serverTool, input, ctx.signal),
    };
  }

  async #call(scope: McpConnectionScope, tool: string, args: Record<string, unknown>, signal: AbortSignal | undefined): Promise<string> {
    const { entry } = scope;
    const started = this.#now();
    const timeoutMs = entry.timeoutMs ?? DEFAULT_MCP_TIMEOUT_MS;
    const event = (outcome: McpCallEvent["outcome"], extra: Partial<McpCallEvent> = {}) => {
      const e: McpCallEvent = { kind: "call", server: entry.name, tool, outcome, durationMs: this.#now() - started, ...extra };
      this.#options.onEvent?.(e);
      this.#options.logger?.info("mcp tool call", { ...e });
    };
    let connection: McpConnection;
    try {
      connection = await this.#options.connections.get(scope);
    } catch (error) {
      if (error instanceof UnauthorizedError || isSignIn(error)) {
        event("sign_in_required");
        return signInText(scope.entry.name, error instanceof McpConnectError ? error.signInUrl : undefined);
      }
      if (error instanceof McpConnectError && error.reason !== "unreachable") {
        event("refused");
        throw new ToolError(`the ${entry.name} server was not used: ${error.message}`, tool, { cause: error });
      }
      event(timedOut(error) ? "timeout" : "unreachable");
      throw new ToolError(`the ${entry.name} server could not be reached; answer without it or try again later`, tool, { cause: error });
    }
    const release = await connection.slots.acquire(signal);
    const own = new AbortController();
    connection.inFlight.add(own);
    try {
      const callSignal = signal ? AbortSignal.any([signal, own.signal]) : own.signal;
      const result = (await connection.client.callTool({ name: tool, arguments: args }, undefined, {
        signal: callSignal,
        timeout: timeoutMs,
      })) as CallToolResult;
      const rendered = resultText(result, entry.maxOutputBytes ?? DEFAULT_MCP_MAX_OUTPUT_BYTES);
      if (result.isError) {
        event("tool_error", { outputBytes: rendered.bytes });
        throw new ToolError(`the ${entry.name} server answered with an error: ${rendered.text}`, tool);
      }
      event("success", { outputBytes: rendered.bytes, truncated: rendered.truncated });
      return rendered.text;
    } catch (error) {
      if (error instanceof ToolError) throw error;
      // The SDK turns an abort's reason into a timeout error: the reason says what happened.
      const egress = egressErrorOf(own.signal.aborted ? own.signal.reason : error);
      if (egress) {
        await this.#options.connections.drop(connection);
        event("refused");
        if (egress.reason === "response_too_large") {
          throw new ToolError(
            `the ${entry.name} server's answer was over ${maxResponseBytesOf(entry)} bytes and was not read; ask it for less (a narrower query, fewer rows)`,
            tool,
            { cause: error },
          );
        }
        throw new ToolError(`the ${entry.name} server was not reached: ${egress.message}`, tool, { cause: error });
      }
      if (error instanceof UnauthorizedError) {
        await this.#options.connections.drop(connection);
        event("sign_in_required");
        const url = connection.oauth?.authorizationUrl();
        return signInText(entry.name, url === undefined ? undefined : String(url));
      }
      if (timedOut(error) || signal?.aborted) {
        event("timeout");
        throw new ToolError(`the ${entry.name} server did not answer within ${timeoutMs} ms; answer without it or try a narrower request`, tool, {
          cause: error,
        });
      }
      if (error instanceof McpError) {
        event("tool_error");
        throw new ToolError(`the ${entry.name} server refused the call (${error.code}); check the arguments against the tool's schema`, tool, { cause: error });
      }
      await this.#options.connections.drop(connection);
      event("unreachable");
      throw new ToolError(`the ${entry.name} server could not be reached; answer without it or try again later`, tool, { cause: error });
    } finally {
      connection.inFlight.delete(own);
      release();
    }
  }

  /**
   * Stands in for an `oauth` server's tools until the user signs in: calling it gives the link, and
   * called with the code the sign-in page showed, it finishes the sign-in for the caller alone.
   */
  #signInTool(scope: McpConnectionScope, name: string): ToolDefinition<typeof signInArguments> {
    return {
      name,
      description:
        `[${scope.entry.name} MCP server] The user has not signed in to ${scope.entry.name} yet. ` +
        "Call this to give them the sign-in link; once they have signed in, the page shows a code: call this with that code (`code`) when the user gives it. " +
        "Its tools are offered once the sign-in is confirmed.",
      schema: signInArguments,
      parameters: {
        type: "object",
        properties: { code: { type: "string", description: "The confirmation code the sign-in page showed the user, e.g. ABCD-EFGH." } },
      },
      sideEffects: false,
      // The sign-in link is this user's: no one else in a shared thread sees it.
      readsAsUser: true,
      run: async ({ code }) => {
        if (code !== undefined) {
          const confirmed = await this.#options.connections.confirmSignIn(scope, code);
          if (confirmed === "wrong_code")
            return `That code does not finish the user's sign-in to ${scope.entry.name}; ask them to check it (a few wrong codes cancel the sign-in).`;
          if (confirmed === "none_waiting") {
            return (
              `No sign-in to ${scope.entry.name} started by this user is waiting for a code (it expired, or the link was someone else's). ` +
              "Call this without a code for a new link."
            );
          }
        }
        // They may have signed in since the list was read: this looks again, and the next turn offers the tools.
        this.#discoveries.delete(connectionKey(scope));
        const discovery = await this.#discovery(scope);
        if (discovery.state === "ready") return `The user is signed in to ${scope.entry.name}; its tools are offered from their next message.`;
        return signInText(scope.entry.name, discovery.state === "sign_in" ? discovery.url : undefined);
      },
    };
  }
}

/** What the user is told when a server needs them to sign in: a tool result, so the turn goes on. */
function signInText(server: string, url: string | undefined): string {
  const where = url === undefined ? "Sign-in could not be started; ask an administrator to check the server's settings." : `Open ${url} to sign in.`;
  return (
    `Sign-in required: the ${server} server acts with the user's own account, and they have not signed in (or their sign-in expired). ` +
    `${where} Tell the user, with the link: once signed in, the page shows a code they give here to finish (only their own code works), ` +
    "then they repeat the request."
  );
}

/** The approval policy of an MCP tool that changes things: a tool not marked read-only waits unless configured; a destructive one always waits. */
function policyOf(entry: McpServerEntry, tool: OfferedTool): ToolApprovalPolicy | undefined {
  if (tool.readOnly) return undefined;
  const configured = entry.approvals?.[tool.serverTool];
  if (tool.destructive) return { ...configured, require: "always" };
  return configured ?? { require: "always" };
}

function timedOut(error: unknown): boolean {
  return error instanceof McpError && error.code === ErrorCode.RequestTimeout;
}

function isSignIn(error: unknown): boolean {
  return error instanceof McpConnectError && error.reason === "sign_in_required";
}
