import type { ApprovalContext } from "../store/approval-store.js";

/** What a channel's approval says above the calls that led to the one waiting. */
export function approvalContextHeading(context: ApprovalContext): string {
  return context.readUntrusted
    ? "Before this call, the turn read output from documents, data or other systems, which may carry instructions: check that the call is what was asked."
    : "Before this call, the turn ran:";
}

/**
 * The calls that led to a waiting one, one line each (`tool args → output`, untrusted ones marked),
 * oldest first: plain text, already cut and stripped of hidden characters (`excerptText`); each
 * channel escapes it for its format.
 */
export function approvalContextLines(context: ApprovalContext): string[] {
  const lines = context.calls.map((c) => `${c.untrusted ? "[untrusted] " : ""}${c.tool} ${c.args} → ${c.output}`);
  return context.omittedCalls > 0 ? [`(${context.omittedCalls} earlier calls not shown)`, ...lines] : lines;
}
