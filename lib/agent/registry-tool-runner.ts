import { ToolMessage } from "@langchain/core/messages";
import { stampTokenCount } from "../model-view/index.js";
import type { Caller, Principal } from "../auth/principal.js";
import type { ToolCallContext } from "../tools/tool.js";
import type { FunctionTool } from "./local-chat-model.js";
import type { ToolCallRequest, ToolRunner } from "./tool-runner.js";

export interface ToolExecution {
  content: string;
  status: "success" | "error";
}

/** The shape of `ToolRegistry`: permissions, validation, timeouts and the idempotency guard live there. */
export interface ToolExecutor {
  toolSpecs(caller: Caller): FunctionTool[];
  execute(call: ToolCallRequest, ctx: ToolCallContext): Promise<ToolExecution>;
}

/** Fields of the checkpointed ToolMessage for one output: inline, or a preview and an artifact handle. */
export type OutputOffload = (
  output: string,
  meta: { conversationId: string; createdBy: Principal; turnId: string; toolCallId: string; toolName: string },
) => Promise<{ content: string; artifact?: unknown }>;

/** Runs calls through the registry and keeps large outputs out of checkpoints. */
export class RegistryToolRunner implements ToolRunner {
  constructor(
    private readonly executor: ToolExecutor,
    private readonly offload?: OutputOffload,
  ) {}

  toolSpecs(caller: Caller): FunctionTool[] {
    return this.executor.toolSpecs(caller);
  }

  async run(call: ToolCallRequest, ctx: ToolCallContext): Promise<ToolMessage> {
    const result = await this.executor.execute(call, ctx);
    const fields =
      result.status === "success" && this.offload
        ? await this.offload(result.content, {
            conversationId: ctx.conversationId,
            createdBy: ctx.caller.principal,
            turnId: ctx.turnId,
            toolCallId: call.id,
            toolName: call.name,
          })
        : { content: result.content };
    return stampTokenCount(new ToolMessage({ tool_call_id: call.id, name: call.name, status: result.status, ...fields }));
  }
}
