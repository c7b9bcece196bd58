import type { Db } from "mongodb";
import type { Caller } from "../auth/principal.js";
import type { McpConfig, McpServerEntry } from "../config/mcp-servers-config.js";
import type { SecretSource } from "../tools/secrets.js";
import type { ToolLogger } from "../tools/tool-registry.js";
import type { Resolve } from "./egress-fetch.js";
import { effectiveMcpServers } from "./effective-mcp-servers.js";
import { McpConnections } from "./mcp-connections.js";
import type { McpOAuthProviderFactory } from "./mcp-oauth-provider.js";
import { McpServerStore } from "./mcp-server-store.js";
import { McpToolCatalog, type McpCallEvent } from "./mcp-tool-catalog.js";

export interface McpOptions {
  secrets: SecretSource;
  /** Per-user OAuth (lib/mcp/oauth/). Default: none; an `oauth` server's tools are then not offered. */
  oauth?: McpOAuthProviderFactory;
  /** Local mode only: stdio servers may run. Default: false. */
  allowStdio?: boolean;
  /**
   * Networks reachable although not public, over `MCP_EGRESS_ALLOW` (the local server: loopback).
   * Default: none.
   */
  egressAllow?: readonly string[];
  /** Resolves servers' host names. Default: the system resolver. */
  resolve?: Resolve;
  logger?: ToolLogger;
  /** Receives each MCP call's and discovery's outcome (Lambda: metrics). Default: none. */
  onEvent?: (event: McpCallEvent) => void;
}

/** The MCP client of one container: tenants' entries, connections and discovered tools (docs/mcp.md). */
export interface Mcp {
  store: McpServerStore;
  /** `MCP_SERVERS`. */
  defaults: readonly McpServerEntry[];
  catalog: McpToolCatalog;
  /** The caller's tenant's servers: its own entries over the defaults. */
  serversOf(caller: Caller): Promise<McpServerEntry[]>;
  close(): Promise<void>;
}

export function createMcp(db: Db, config: McpConfig, options: McpOptions): Mcp {
  const store = new McpServerStore(db, { cacheMs: config.entriesCacheSeconds * 1000 });
  const connections = new McpConnections({
    secrets: options.secrets,
    oauth: options.oauth,
    allowStdio: options.allowStdio,
    egress: { allow: [...config.egressAllow, ...(options.egressAllow ?? [])], ...(options.resolve && { resolve: options.resolve }) },
  });
  // The deployment's entries are the very objects loaded from MCP_SERVERS; a tenant's come from the database.
  const deploymentEntries = new Set<McpServerEntry>(config.servers);
  const catalog = new McpToolCatalog({
    connections,
    config,
    logger: options.logger,
    onEvent: options.onEvent,
    isDeploymentEntry: (entry) => deploymentEntries.has(entry),
  });
  return {
    store,
    defaults: config.servers,
    catalog,
    async serversOf(caller) {
      const own = await store.entriesOf({ issuer: caller.principal.issuer, tenant: caller.principal.tenant });
      return effectiveMcpServers(config.servers, own);
    },
    close: () => connections.close(),
  };
}
