import { AIMessage, ToolMessage, type MessageContent } from "@langchain/core/messages";
import type { Approvers } from "../config/approvals-config.js";
import type { ApprovalContext } from "../store/approval-store.js";
import { stampTokenCount } from "../model-view/index.js";

/** One call the turn waits on: what the interrupt shows, and what its approval record holds. */
export interface PendingCall {
  approvalId: string;
  toolCallId: string;
  tool: string;
  args: Record<string, unknown>;
  approvers: Approvers;
  /** The calls and outputs of the turn that led to it, for the approver. */
  context?: ApprovalContext;
}

/** The value of the turn's interrupt: every call of the model response that waits, together. */
export interface ApprovalRequest {
  approvals: PendingCall[];
}

/** How one waiting call was settled, as the graph resumes with it. */
export type ApprovalOutcome =
  | { kind: "approve"; by: string }
  | { kind: "edit"; by: string; args: Record<string, unknown> }
  | { kind: "reject"; by: string; reason?: string }
  | { kind: "expire"; deadline: string };

/** The resume value: an outcome per approval id, for every call of the interrupt. */
export interface ApprovalResume {
  outcomes: Record<string, ApprovalOutcome>;
}

/** What the model reads instead of a result when a call did not run. */
export function notRunMessage(call: { id: string; name: string }, outcome: ApprovalOutcome | undefined): ToolMessage {
  const content = !outcome
    ? "Not run: no decision was recorded for this call."
    : outcome.kind === "expire"
      ? `Not run: nobody approved this call before its approval expired at ${outcome.deadline}. Tell the user it was not done; call it again only if they ask.`
      : `Not run: ${outcome.by} rejected this call${outcome.kind === "reject" && outcome.reason ? `, saying: ${outcome.reason}` : ""}. ` +
        "Do not call it again unless the user asks.";
  return stampTokenCount(new ToolMessage({ tool_call_id: call.id, name: call.name, status: "error", content }));
}

/**
 * The model's message with edited arguments in place of those it gave (tool calls and Converse
 * `tool_use` blocks alike), under the same id so the thread's message is replaced: the model's
 * view shows the call that ran, not the one it first asked for.
 */
export function withEditedCalls(message: AIMessage, edits: ReadonlyMap<string, Record<string, unknown>>): AIMessage {
  const tool_calls = (message.tool_calls ?? []).map((c) => (c.id !== undefined && edits.has(c.id) ? { ...c, args: edits.get(c.id)! } : c));
  const content: MessageContent = Array.isArray(message.content)
    ? message.content.map((block) => {
        const id = (block as { id?: unknown }).id;
        return block.type === "tool_use" && typeof id === "string" && edits.has(id) ? { ...block, input: edits.get(id) } : block;
      })
    : message.content;
  return stampTokenCount(
    new AIMessage({
      id: message.id,
      content,
      tool_calls,
      invalid_tool_calls: message.invalid_tool_calls,
      additional_kwargs: message.additional_kwargs,
      response_metadata: message.response_metadata,
      usage_metadata: message.usage_metadata,
    }),
  );
}
