import type { ToolMessage } from "@langchain/core/messages";
import type { Caller } from "../auth/principal.js";
import type { ToolCallContext } from "../tools/tool.js";
import type { FunctionTool } from "./local-chat-model.js";

export interface ToolCallRequest {
  id: string;
  name: string;
  args: Record<string, unknown>;
}

/**
 * What the graph needs: the tools a caller may be offered (as `bindTools` takes them), and a way
 * to run one call into the ToolMessage that is checkpointed (large outputs already offloaded).
 */
export interface ToolRunner {
  toolSpecs(caller: Caller): FunctionTool[];
  run(call: ToolCallRequest, ctx: ToolCallContext): Promise<ToolMessage>;
}
