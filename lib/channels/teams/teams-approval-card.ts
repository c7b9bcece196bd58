import type { ApprovalContext } from "../../store/approval-store.js";
import { approvalContextHeading, approvalContextLines } from "../approval-context-text.js";

/** The verbs of the card's `Action.Execute` buttons. */
export const TEAMS_APPROVAL_VERBS = { approve: "threadwise.approval.approve", reject: "threadwise.approval.reject", edit: "threadwise.approval.edit" } as const;
/** The id of the card's arguments input: Teams sends its text in the action's `data` under this name. */
export const TEAMS_ARGS_INPUT = "args";

/** One waiting call, as the card shows it. */
export interface CardApproval {
  approvalId: string;
  tool: string;
  args: Record<string, unknown>;
  expiresAt: string;
  /** The calls and outputs of the turn that led to it. */
  context?: ApprovalContext;
}

/**
 * What led to the call, as a RichTextBlock of TextRuns: unlike a TextBlock's, a TextRun's text is
 * never read as Markdown, so an output's links and emphasis show as the characters they are.
 */
function contextBlocks(context: ApprovalContext | undefined): Record<string, unknown>[] {
  if (!context || context.calls.length === 0) return [];
  return [
    { type: "TextBlock", text: approvalContextHeading(context), wrap: true, ...(context.readUntrusted && { color: "Warning" }) },
    { type: "RichTextBlock", inlines: approvalContextLines(context).map((line) => ({ type: "TextRun", text: `${line}\n`, fontType: "Monospace" })) },
  ];
}

/**
 * An Adaptive Card (1.4, Universal Actions) asking for a decision on one waiting call: its
 * arguments in an editable box, and Approve, Edit (run with the box's arguments) and Reject.
 * `edit` shows a refused edit again: the text as typed, and what is wrong with it.
 */
export function approvalCard(conversationId: string, approval: CardApproval, edit?: { text: string; error: string }): Record<string, unknown> {
  const data = { conversationId, approvalId: approval.approvalId };
  return {
    type: "AdaptiveCard",
    $schema: "http://adaptivecards.io/schemas/adaptive-card.json",
    version: "1.4",
    body: [
      { type: "TextBlock", weight: "Bolder", text: `${approval.tool} waits for approval`, wrap: true },
      {
        type: "Input.Text",
        id: TEAMS_ARGS_INPUT,
        label: "Arguments (JSON)",
        isMultiline: true,
        value: edit?.text ?? JSON.stringify(approval.args, null, 2),
      },
      ...(edit ? [{ type: "TextBlock", text: edit.error, color: "Attention", wrap: true }] : []),
      ...contextBlocks(approval.context),
      { type: "TextBlock", text: `Until ${approval.expiresAt}`, isSubtle: true, wrap: true },
    ],
    actions: [
      { type: "Action.Execute", title: "Approve", verb: TEAMS_APPROVAL_VERBS.approve, data, style: "positive" },
      { type: "Action.Execute", title: "Edit", verb: TEAMS_APPROVAL_VERBS.edit, data },
      { type: "Action.Execute", title: "Reject", verb: TEAMS_APPROVAL_VERBS.reject, data, style: "destructive" },
    ],
  };
}
