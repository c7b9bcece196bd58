import type { ToolMessage } from "@langchain/core/messages";
import type { Caller, ToolContext, ToolDefinition } from "../tools/tool.js";

export interface ToolCallRequest {
  id: string;
  name: string;
  args: Record<string, unknown>;
}

/**
 * What the graph's tool node needs: the tools a caller may be offered, and a way to run
 * one call into the ToolMessage that is checkpointed (large outputs already offloaded).
 */
export interface ToolRunner {
  available(caller: Caller): ToolDefinition[];
  run(call: ToolCallRequest, ctx: ToolContext): Promise<ToolMessage>;
}
