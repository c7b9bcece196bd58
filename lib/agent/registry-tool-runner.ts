import { ToolMessage, type BaseMessage } from "@langchain/core/messages";
import type { ApprovalContext } from "../store/approval-store.js";
import { approvalContextOf } from "./approval-context.js";
import { stampTokenCount } from "../model-view/index.js";
import type { WriteFence } from "../store/write-fence.js";
import type { Caller, Principal } from "../auth/principal.js";
import type { Provenance } from "../auth/data-visibility.js";
import { PROVENANCE_KEY } from "../model-view/provenance.js";
import type { Approvers } from "../config/approvals-config.js";
import type { ToolCallContext } from "../tools/tool.js";
import type { FunctionTool } from "./local-chat-model.js";
import type { ToolCallRequest, ToolRunner } from "./tool-runner.js";

export interface ToolExecution {
  content: string;
  status: "success" | "error";
  /** What a caller needs to see the output (`ToolRegistry.execute`); kept on the message and its artifact. */
  provenance?: Provenance;
}

/** The shape of `ToolRegistry`: permissions, validation, timeouts and the idempotency guard live there. */
export interface ToolExecutor {
  toolSpecs(caller: Caller): FunctionTool[];
  mayUse(toolName: string, caller: Caller): boolean;
  argumentIssues(toolName: string, args: unknown): unknown[];
  /** Whether the tool's output is untrusted (`ToolDefinition.trust`). */
  isUntrusted(toolName: string): boolean;
  execute(call: ToolCallRequest, ctx: ToolCallContext): Promise<ToolExecution>;
  /** `execute` with the output's provenance (`ToolRegistry.executeWithProvenance`); without it, outputs are stored without provenance. */
  executeWithProvenance?(call: ToolCallRequest, ctx: ToolCallContext): Promise<ToolExecution>;
}

/** Fields of the checkpointed ToolMessage for one output: inline, or a preview and an artifact handle. */
export type OutputOffload = (
  output: string,
  meta: { createdBy: Principal; turnId: string; toolCallId: string; toolName: string; fence: WriteFence; provenance?: Provenance },
) => Promise<{ content: string; artifact?: unknown }>;

/** Which calls wait for a person (`ApprovalPolicy`). */
export interface ApprovalCheck {
  approversFor(toolName: string, args: Record<string, unknown>, turn?: { readUntrusted: boolean }): Approvers | undefined;
}

/** Runs calls through the registry and keeps large outputs out of checkpoints. */
export class RegistryToolRunner implements ToolRunner {
  constructor(
    private readonly executor: ToolExecutor,
    private readonly offload?: OutputOffload,
    private readonly approvals?: ApprovalCheck,
  ) {}

  toolSpecs(caller: Caller): FunctionTool[] {
    return this.executor.toolSpecs(caller);
  }

  approversFor(call: ToolCallRequest, caller: Caller, turn: readonly BaseMessage[] = []): Approvers | undefined {
    const readUntrusted = this.approvalContext(turn).readUntrusted;
    const approvers = this.approvals?.approversFor(call.name, call.args, { readUntrusted });
    // A call the registry would refuse anyway is not put to a person: the model gets its error at once.
    if (!approvers || !this.executor.mayUse(call.name, caller) || this.executor.argumentIssues(call.name, call.args).length > 0) return undefined;
    return approvers;
  }

  approvalContext(turn: readonly BaseMessage[]): ApprovalContext {
    return approvalContextOf(turn, (name) => this.executor.isUntrusted(name));
  }

  async run(call: ToolCallRequest, ctx: ToolCallContext): Promise<ToolMessage> {
    const result = this.executor.executeWithProvenance ? await this.executor.executeWithProvenance(call, ctx) : await this.executor.execute(call, ctx);
    const offload = result.status === "success" ? this.offload : undefined;
    if (offload && !ctx.fence) throw new TypeError("tool outputs are offloaded only within a turn, under its fence");
    const fields =
      offload && ctx.fence
        ? await offload(result.content, {
            createdBy: ctx.caller.principal,
            turnId: ctx.turnId,
            toolCallId: call.id,
            toolName: call.name,
            fence: ctx.fence,
            ...(result.provenance && { provenance: result.provenance }),
          })
        : { content: result.content };
    // The provenance is kept beside the output it governs, so whatever stores (or encrypts) one stores the other.
    const additional_kwargs = result.provenance ? { [PROVENANCE_KEY]: result.provenance } : {};
    return stampTokenCount(new ToolMessage({ tool_call_id: call.id, name: call.name, status: result.status, additional_kwargs, ...fields }));
  }
}
