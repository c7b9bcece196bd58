import { z } from "zod";
import { DEFAULT_TOOL_TIMEOUT_MS } from "../config/tools-config.js";
import { ToolError } from "../errors.js";
import { combinedProvenance, type DataSource, type Provenance } from "../auth/data-visibility.js";
import type { Caller } from "../auth/principal.js";
import type { ToolCallContext, ToolContext, ToolDefinition } from "./tool.js";
import type { ToolIdempotencyGuard } from "./tool-idempotency-guard.js";

/** A tool call as the model emitted it. */
export interface ToolCallRequest {
  id: string;
  name: string;
  args: unknown;
}

/** What goes back to the model as the tool message. */
export interface ToolCallResult {
  content: string;
  status: "success" | "error";
  /** What a caller needs to see the output: the tool's own source, then what the output repeats (`ToolContext.derivedFrom`). */
  provenance?: Provenance;
}

/** A tool in the shape chat models' `bindTools` accept (OpenAI function format). */
export interface ToolSpec {
  type: "function";
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/** Structured fields only: tool names, sizes and durations, never arguments or outputs. */
export interface ToolLogger {
  info(message: string, fields: Record<string, unknown>): void;
  warn(message: string, fields: Record<string, unknown>): void;
}

export interface ToolRegistryOptions {
  /** Required as soon as one tool has side effects: such a tool never runs unguarded. */
  guard?: ToolIdempotencyGuard;
  /** Per-call time limit. Default: `DEFAULT_TOOL_TIMEOUT_MS`. */
  timeoutMs?: number;
  /**
   * Roles allowed per tool name (`TOOL_ROLES`), over each tool's own `allowedRoles`; a tool in
   * neither is open to every caller. Names of tools not registered here are refused by
   * configuration (`loadToolsConfig`) unless they are tools this deployment leaves off.
   */
  roles?: Readonly<Record<string, readonly string[]>>;
  logger?: ToolLogger;
}

class ToolTimeoutError extends Error {
  override name = "ToolTimeoutError";
}

/** Longest tool name Bedrock accepts; a name the model made up is echoed back cut to it. */
const MAX_TOOL_NAME_CHARS = 64;

/** A tool name the model wrote, quoted for an error it reads: cut, so an unknown name cannot make the error unbounded. */
function quotedToolName(name: string): string {
  return name.length > MAX_TOOL_NAME_CHARS ? `"${name.slice(0, MAX_TOOL_NAME_CHARS)}…" (${name.length} characters)` : `"${name}"`;
}

/**
 * The tools of a deployment, filtered per caller. Every failure of a call (unknown tool,
 * refused permission, invalid arguments, an error thrown by the tool, a timeout) comes back
 * as a tool error the model can act on; `execute` never throws, so the turn goes on.
 */
export class ToolRegistry {
  readonly #tools: Map<string, ToolDefinition>;
  /** Converted once: the schemas are offered on every model call. */
  readonly #specs = new Map<string, ToolSpec>();
  readonly #guard?: ToolIdempotencyGuard;
  readonly #timeoutMs: number;
  /** Roles per tool name; absent: open to every caller. */
  readonly #allowedRoles = new Map<string, readonly string[]>();
  readonly #logger?: ToolLogger;

  constructor(tools: readonly ToolDefinition[], options: ToolRegistryOptions = {}) {
    this.#tools = new Map();
    for (const tool of tools) {
      if (this.#tools.has(tool.name)) throw new Error(`duplicate tool name: ${tool.name}`);
      if (tool.sideEffects && !options.guard) throw new Error(`tool ${tool.name} has side effects but no idempotency guard was given`);
      this.#tools.set(tool.name, tool);
      const allowed = options.roles?.[tool.name] ?? tool.allowedRoles;
      if (allowed !== undefined) this.#allowedRoles.set(tool.name, allowed);
      const { $schema: _ignored, ...parameters } = tool.parameters ?? (z.toJSONSchema(tool.schema, { io: "input" }) as Record<string, unknown>);
      this.#specs.set(tool.name, { type: "function", function: { name: tool.name, description: tool.description, parameters } });
    }
    this.#guard = options.guard;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS;
    this.#logger = options.logger;
  }

  /** Every tool's name, in registration order, whoever may use it (the local server's start-up lines list them). */
  names(): string[] {
    return [...this.#tools.keys()];
  }

  /** The tools this caller may use, in registration order. */
  available(caller: Caller): ToolDefinition[] {
    return [...this.#tools.values()].filter((tool) => this.mayUse(tool.name, caller));
  }

  /** What `bindTools` needs for this caller: name, description and JSON schema of each permitted tool. */
  toolSpecs(caller: Caller): ToolSpec[] {
    return this.available(caller).map((tool) => this.#specs.get(tool.name)!);
  }

  /** Whether the caller may use the named tool: false for a tool not registered, so unknown names fail closed. */
  mayUse(toolName: string, caller: Caller): boolean {
    if (!this.#tools.has(toolName)) return false;
    const allowed = this.#allowedRoles.get(toolName);
    return allowed === undefined || allowed.some((role) => caller.roles.includes(role));
  }

  /**
   * The source an output of the named tool has when this caller fetches it: the roles that allow the
   * tool (none when it is open to everyone) and, for a tool that reads as the user, the caller.
   */
  sourceOf(toolName: string, caller: Caller): DataSource {
    // A tool not registered here is open to no one, as `mayUse` says.
    const roles = this.#tools.has(toolName) ? this.#allowedRoles.get(toolName) : [];
    return {
      tool: toolName,
      ...(roles !== undefined && { roles: [...roles] }),
      ...(this.#tools.get(toolName)?.readsAsUser && { user: { ...caller.principal } }),
    };
  }

  /** Whether a tool registered here changes things (it runs through the guard, and approvals may hold it). */
  hasSideEffects(toolName: string): boolean {
    return this.#tools.get(toolName)?.sideEffects ?? false;
  }

  /** Whether the named tool's output is untrusted (`trust: "untrusted"`); true for a tool not registered here, whose output nobody vouches for. */
  isUntrusted(toolName: string): boolean {
    const tool = this.#tools.get(toolName);
    return tool === undefined || tool.trust === "untrusted";
  }

  /** The named tool's arguments JSON Schema, as offered to the model; undefined for a tool not registered here. */
  argumentsSchema(toolName: string): Record<string, unknown> | undefined {
    return this.#specs.get(toolName)?.function.parameters;
  }

  /** The problems of `args` for the named tool, as its schema finds them; empty when they are valid. */
  argumentIssues(toolName: string, args: unknown): { path: string; message: string }[] {
    const tool = this.#tools.get(toolName);
    if (!tool) return [{ path: "(tool)", message: `there is no tool named ${quotedToolName(toolName)}` }];
    const parsed = tool.schema.safeParse(args ?? {});
    return parsed.success ? [] : parsed.error.issues.map((i) => ({ path: i.path.join(".") || "(arguments)", message: i.message }));
  }

  /** Runs one tool call for the caller in `ctx`; resolves with the tool message content, never rejects. */
  async execute(call: ToolCallRequest, ctx: Omit<ToolCallContext, "toolCallId">): Promise<ToolCallResult> {
    const { content, status } = await this.executeWithProvenance(call, ctx);
    return { content, status };
  }

  /**
   * `execute`, and what a caller needs to see the output (`ToolCallResult.provenance`): the tool's
   * own source for this caller (`sourceOf`), then what the output repeats (`ToolContext.derivedFrom`).
   */
  async executeWithProvenance(call: ToolCallRequest, ctx: Omit<ToolCallContext, "toolCallId">): Promise<ToolCallResult & { provenance: Provenance }> {
    const started = Date.now();
    const caller = ctx.caller;
    const derived: Provenance[] = [];
    const result = await this.#execute(call, {
      ...ctx,
      toolCallId: call.id,
      mayUse: (name) => this.mayUse(name, caller),
      derivedFrom: (provenance) => derived.push(provenance),
      sourceOf: (name) => this.sourceOf(name, caller),
    });
    this.#logger?.info("tool call finished", {
      tool: this.#tools.has(call.name) ? call.name : "unknown",
      status: result.status,
      durationMs: Date.now() - started,
      contentChars: result.content.length,
    });
    // A call refused before it ran (unknown tool, no permission) returned only our own refusal: it carries no data of the tool's.
    const own = this.mayUse(call.name, caller) ? this.sourceOf(call.name, caller) : { tool: call.name };
    return { ...result, provenance: combinedProvenance([own], ...derived) };
  }

  async #execute(call: ToolCallRequest, ctx: ToolContext): Promise<ToolCallResult> {
    const tool = this.#tools.get(call.name);
    if (!tool || !this.mayUse(tool.name, ctx.caller)) {
      // A tool the caller may not use is answered like an unknown one among those offered.
      const offered = this.available(ctx.caller).map((t) => t.name);
      const reason = tool ? `you are not permitted to use the tool "${call.name}"` : `there is no tool named ${quotedToolName(call.name)}`;
      return failure(`${reason}. Available tools: ${offered.join(", ") || "none"}.`);
    }
    const parsed = tool.schema.safeParse(call.args ?? {});
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i) => `${i.path.join(".") || "(arguments)"}: ${i.message}`);
      return failure(`invalid arguments for ${tool.name}: ${issues.join("; ")}. Fix the arguments and call again.`);
    }
    const controller = new AbortController();
    const onAbort = () => controller.abort(ctx.signal?.reason);
    ctx.signal?.addEventListener("abort", onAbort, { once: true });
    let timer: NodeJS.Timeout | undefined;
    const timeoutMs = tool.timeoutMs ?? this.#timeoutMs;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const error = new ToolTimeoutError(`timed out after ${timeoutMs} ms`);
        controller.abort(error);
        reject(error);
      }, timeoutMs);
    });
    const runCtx: ToolContext = { ...ctx, signal: controller.signal };
    const run = tool.sideEffects && this.#guard ? this.#guard.run(tool, parsed.data, runCtx) : tool.run(parsed.data, runCtx);
    try {
      const content = await Promise.race([run, timeout]);
      return { content, status: "success" };
    } catch (error) {
      return failure(this.#describe(tool, error));
    } finally {
      clearTimeout(timer);
      ctx.signal?.removeEventListener("abort", onAbort);
      // A run that lost the race still settles later; its outcome is no longer anyone's concern.
      run.catch(() => undefined);
    }
  }

  #describe(tool: ToolDefinition, error: unknown): string {
    if (error instanceof ToolTimeoutError) {
      return `${tool.name} ${error.message}. Try a narrower request (fewer rows, a shorter period) or another tool.`;
    }
    if (error instanceof ToolError) return `${tool.name}: ${error.message}`;
    // Unexpected failures may carry internals; the model gets their kind, the log gets the rest.
    const kind = error instanceof Error ? error.name : typeof error;
    this.#logger?.warn("tool call failed unexpectedly", { tool: tool.name, errorName: kind });
    return `${tool.name} failed unexpectedly (${kind}). You may retry once or answer without this tool.`;
  }
}

function failure(message: string): ToolCallResult {
  return { content: `Error: ${message}`, status: "error" };
}
