import type { BaseMessage, ToolMessage } from "@langchain/core/messages";
import { ApprovalPolicy } from "../approvals/approval-policy.js";
import type { Caller } from "../auth/principal.js";
import type { ToolApprovalPolicy } from "../config/approvals-config.js";
import type { McpServerEntry } from "../config/mcp-servers-config.js";
import { RegistryToolRunner, type OutputOffload } from "../agent/registry-tool-runner.js";
import type { ToolCallRequest, ToolRunner } from "../agent/tool-runner.js";
import type { ToolCallContext, ToolDefinition } from "../tools/tool.js";
import { ToolRegistry, type ToolRegistryOptions } from "../tools/tool-registry.js";
import type { McpToolCatalog } from "./mcp-tool-catalog.js";

/** Tool sets kept built (registry and policy) at once; the least recently built is dropped past it. */
const MAX_BUILT_SETS = 100;

export interface TenantToolRunnerOptions {
  /** The deployment's own tools, offered to everyone first and in their order, as without MCP. */
  tools: readonly ToolDefinition[];
  registry: ToolRegistryOptions;
  /** `TOOL_APPROVALS`. */
  approvals: Readonly<Record<string, ToolApprovalPolicy>>;
  offload?: OutputOffload;
  catalog: McpToolCatalog;
  /** The caller's tenant's servers (its own entries over `MCP_SERVERS`); empty: the built-in tools alone. */
  servers(caller: Caller): Promise<readonly McpServerEntry[]>;
  logger?: { warn(message: string, fields: Record<string, unknown>): void };
}

/**
 * The tools of a turn: the built-in ones, then the caller's tenant's MCP tools, resolved per
 * caller (`forCaller`) from the catalog's cache. A caller whose tenant has no server gets the
 * runner of the built-in tools, unchanged; so does everyone when the MCP tools cannot be listed.
 */
export class TenantToolRunner implements ToolRunner {
  readonly #builtIn: RegistryToolRunner;
  readonly #builtInNames: ReadonlySet<string>;
  readonly #built = new Map<string, RegistryToolRunner>();
  readonly #options: TenantToolRunnerOptions;

  constructor(options: TenantToolRunnerOptions) {
    this.#options = options;
    this.#builtIn = this.#runner(options.tools, {});
    this.#builtInNames = new Set(options.tools.map((t) => t.name));
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
    if (hit) return hit;
    const runner = this.#runner([...this.#options.tools, ...set.tools], set.approvals);
    this.#built.set(set.key, runner);
    if (this.#built.size > MAX_BUILT_SETS) this.#built.delete(this.#built.keys().next().value as string);
    return runner;
  }

  #runner(tools: readonly ToolDefinition[], mcpApprovals: Record<string, ToolApprovalPolicy>): RegistryToolRunner {
    const registry = new ToolRegistry(tools, this.#options.registry);
    const policy = new ApprovalPolicy({ ...this.#options.approvals, ...mcpApprovals }, tools);
    return new RegistryToolRunner(registry, this.#options.offload, policy);
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
