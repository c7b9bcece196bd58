import type { BaseMessage, ToolMessage } from "@langchain/core/messages";
import type { ApprovalContext } from "../store/approval-store.js";
import type { Caller } from "../auth/principal.js";
import type { Approvers } from "../config/approvals-config.js";
import type { ToolCallContext } from "../tools/tool.js";
import type { FunctionTool } from "./local-chat-model.js";

export interface ToolCallRequest {
  id: string;
  name: string;
  args: Record<string, unknown>;
}

/**
 * What the graph needs: the tools a caller may be offered (as `bindTools` takes them), who must
 * approve a call before it runs, and a way to run one call into the ToolMessage that is
 * checkpointed (large outputs already offloaded).
 */
export interface ToolRunner {
  /**
   * The runner for this caller's tools, when they depend on who asks beyond roles (a tenant's MCP
   * servers, discovered and cached): the graph asks it once per node and uses what it gives.
   * Default: this runner serves every caller.
   */
  forCaller?(caller: Caller): Promise<ToolRunner>;
  toolSpecs(caller: Caller): FunctionTool[];
  /**
   * Undefined when the call runs at once: no policy holds it, or it would fail anyway (a tool refused
   * to the caller, invalid arguments). `turn`: the messages of the turn so far, whose untrusted outputs may hold the call.
   */
  approversFor(call: ToolCallRequest, caller: Caller, turn?: readonly BaseMessage[]): Approvers | undefined;
  /** What the turn did before a call that waits, for its approver (`approvalContextOf`). */
  approvalContext?(turn: readonly BaseMessage[]): ApprovalContext;
  run(call: ToolCallRequest, ctx: ToolCallContext): Promise<ToolMessage>;
}
