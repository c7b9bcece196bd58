import type { z } from "zod";
import type { DataSource, Provenance } from "../auth/data-visibility.js";
import type { Caller } from "../auth/principal.js";
import type { WriteFence } from "../store/write-fence.js";

/** What a tool call runs with, as the graph hands it over. */
export interface ToolCallContext {
  conversationId: string;
  turnId: string;
  toolCallId: string;
  /** Who asks: taken from the verified credential, never from the request body. */
  caller: Caller;
  signal?: AbortSignal;
  /** Present whenever a turn runs the tool: a tool that writes does so under it, so a stale turn writes nothing. */
  fence?: WriteFence;
}

/** What a tool's `run` receives: the call's context and the registry's permission check. */
export interface ToolContext extends ToolCallContext {
  /** Whether the caller may use the named tool, by the registry's rules (`read_tool_output` asks it of the tool that produced an output). */
  mayUse(toolName: string): boolean;
  /**
   * Records that the output repeats data of this provenance (`read_tool_output` an artifact's,
   * `search_conversation` the outputs it shows): the output is then seen only by whoever may see
   * that too (`lib/auth/data-visibility.ts`). Default: the output's provenance is the tool's own.
   */
  derivedFrom?(provenance: Provenance): void;
  /** The source an output of the named tool has for this caller, by the registry's rules (`ToolRegistry.sourceOf`): for data stored without provenance. */
  sourceOf?(toolName: string): DataSource;
}

/**
 * One tool the model may call. Tools return text for the model; a thrown `ToolError`
 * becomes a tool error the model sees, and the turn goes on.
 */
export interface ToolDefinition<S extends z.ZodType = z.ZodType> {
  name: string;
  description: string;
  schema: S;
  /** A tool with side effects runs through the idempotency guard, keyed by conversation and tool call. */
  sideEffects: boolean;
  /**
   * `untrusted`: the tool returns text from outside the conversation (documents, table data, other
   * systems) that may carry instructions. A turn that read such output makes the calls that
   * `afterUntrustedOutput: "wait"` guards wait (docs/security.md, "Tool outputs"). Default: trusted.
   */
  trust?: "untrusted";
  /** Roles allowed to use the tool. Default: everyone. */
  allowedRoles?: readonly string[];
  /**
   * The tool reads with the asking user's own identity (a per-user credential, or a data source told
   * who asks and answering per user): what it returns is recorded as that user's, and only they see
   * it in a shared thread (docs/security.md, "The data boundary in shared threads"). Default: false.
   */
  readsAsUser?: boolean;
  /**
   * The arguments' JSON Schema offered to the model, when the tool has one of its own (an MCP
   * server's tool); `schema` still checks the arguments. Default: `schema` converted.
   */
  parameters?: Record<string, unknown>;
  /** This tool's time limit, over the registry's. Default: the registry's `timeoutMs`. */
  timeoutMs?: number;
  /** Questions that call the tool in the offline model's `tool_name {json}` form and that its data answers; the console lists them. Default: none. */
  examples?: readonly string[];
  run(input: z.infer<S>, ctx: ToolContext): Promise<string>;
}
