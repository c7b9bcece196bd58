import type { BaseMessage, ToolMessage } from "@langchain/core/messages";
import { ApprovalPolicy } from "../approvals/approval-policy.js";
import { ByteBoundedMap } from "../byte-bounded-map.js";
import type { Caller } from "../auth/principal.js";
import type { ToolApprovalPolicy } from "../config/approvals-config.js";
import type { McpServerEntry } from "../config/mcp-servers-config.js";
import { RegistryToolRunner, type OutputOffload } from "../agent/registry-tool-runner.js";
import type { ToolCallRequest, ToolRunner } from "../agent/tool-runner.js";
import type { ToolCallContext, ToolDefinition } from "../tools/tool.js";
import { ToolRegistry, type ToolRegistryOptions } from "../tools/tool-registry.js";
import type { McpToolCatalog } from "./mcp-tool-catalog.js";

/**
 * Most bytes of built runners (registry and policy per tool set) a container keeps. A runner holds
 * every tool's name, description and JSON schema (the built-in tools' converted again in each
 * registry): the default tools and server-everything's 13 tools weigh about 18 KB as estimated,
 * and a server at the limits (64 tools of 8 KB schemas) about 1.2 MB. 8 MB keeps hundreds of common
 * tool sets (the count of before kept 100 of any size), however many tenants and users come.
 */
export const DEFAULT_MCP_BUILT_RUNNER_BYTES = 8 * 1024 * 1024;
/** Estimated bytes a registry and policy add per tool beyond its name, description and schema (the maps' entries and spec objects). */
const TOOL_OVERHEAD_BYTES = 256;
/** Estimated bytes of a runner itself (registry, policy, runner objects and their maps). */
const RUNNER_OVERHEAD_BYTES = 1_024;

interface BuiltRunner {
  runner: RegistryToolRunner;
  /** Estimated bytes it holds. */
  bytes: number;
}

export interface TenantToolRunnerOptions {
  /** The deployment's own tools, offered to everyone first and in their order, as without MCP. */
  tools: readonly ToolDefinition[];
  registry: ToolRegistryOptions;
  /** `TOOL_APPROVALS`. */
  approvals: Readonly<Record<string, ToolApprovalPolicy>>;
  offload?: OutputOffload;
  catalog: McpToolCatalog;
  /**
   * Most bytes of built runners kept (estimated); the least recently used is dropped past it, and
   * built again on next use. Default: `DEFAULT_MCP_BUILT_RUNNER_BYTES`.
   */
  builtRunnerBytes?: number;
  /** The caller's tenant's servers (its own entries over `MCP_SERVERS`); empty: the built-in tools alone. */
  servers(caller: Caller): Promise<readonly McpServerEntry[]>;
  logger?: { warn(message: string, fields: Record<string, unknown>): void };
}

/**
 * The tools of a turn: the built-in ones, then the caller's tenant's MCP tools, resolved per
 * caller (`forCaller`) from the catalog's cache. A caller whose tenant has no server gets the
 * runner of the built-in tools, unchanged; so does everyone when the MCP tools cannot be listed.
 * The runners built for tool sets are kept bounded by bytes (what their tools hold), least recently used first.
 */
export class TenantToolRunner implements ToolRunner {
  readonly #builtIn: RegistryToolRunner;
  readonly #builtInNames: ReadonlySet<string>;
  readonly #built: ByteBoundedMap<string, BuiltRunner>;
  readonly #options: TenantToolRunnerOptions;

  constructor(options: TenantToolRunnerOptions) {
    this.#options = options;
    this.#builtIn = this.#runner(options.tools, {}).runner;
    this.#builtInNames = new Set(options.tools.map((t) => t.name));
    this.#built = new ByteBoundedMap(options.builtRunnerBytes ?? DEFAULT_MCP_BUILT_RUNNER_BYTES, (key, built) => 2 * key.length + built.bytes);
  }

  /** Bytes the built runners hold (estimated), at most `builtRunnerBytes`. */
  get builtBytes(): number {
    return this.#built.bytes;
  }

  async forCaller(caller: Caller): Promise<ToolRunner> {
    let set: Awaited<ReturnType<McpToolCatalog["toolSet"]>>;
    try {
      const servers = await this.#options.servers(caller);
      if (servers.length === 0) return this.#builtIn;
      set = await this.#options.catalog.toolSet(caller, caller.principal.tenant, servers, this.#builtInNames);
    } catch (error) {
      // The tenant's entries could not be read: the turn goes on with the built-in tools.
      this.#options.logger?.warn("mcp tools unavailable", { errorName: error instanceof Error ? error.name : typeof error });
      return this.#builtIn;
    }
    if (set.tools.length === 0) return this.#builtIn;
    const hit = this.#built.get(set.key);
    if (hit) return hit.runner;
    const built = this.#runner([...this.#options.tools, ...set.tools], set.approvals);
    this.#built.set(set.key, built);
    return built.runner;
  }

  /** A runner of these tools, and its estimated bytes: each tool's name, description and schema as the registry holds them (UTF-16), plus overheads. */
  #runner(tools: readonly ToolDefinition[], mcpApprovals: Record<string, ToolApprovalPolicy>): BuiltRunner {
    const registry = new ToolRegistry(tools, this.#options.registry);
    const approvals = { ...this.#options.approvals, ...mcpApprovals };
    const policy = new ApprovalPolicy(approvals, tools);
    let bytes = RUNNER_OVERHEAD_BYTES + 2 * JSON.stringify(approvals).length;
    for (const tool of tools) {
      const schema = JSON.stringify(registry.argumentsSchema(tool.name) ?? {});
      bytes += TOOL_OVERHEAD_BYTES + 2 * (tool.name.length + tool.description.length + schema.length);
    }
    return { runner: new RegistryToolRunner(registry, this.#options.offload, policy), bytes };
  }

  // Without `forCaller` (a caller the graph did not resolve), the built-in tools alone.
  toolSpecs(caller: Caller) {
    return this.#builtIn.toolSpecs(caller);
  }

  approversFor(call: ToolCallRequest, caller: Caller, turn?: readonly BaseMessage[]) {
    return this.#builtIn.approversFor(call, caller, turn);
  }

  approvalContext(turn: readonly BaseMessage[]) {
    return this.#builtIn.approvalContext(turn);
  }

  run(call: ToolCallRequest, ctx: ToolCallContext): Promise<ToolMessage> {
    return this.#builtIn.run(call, ctx);
  }
}
