/** The verbs of the card's `Action.Execute` buttons. */
export const TEAMS_APPROVAL_VERBS = { approve: "threadwise.approval.approve", reject: "threadwise.approval.reject" } as const;

/** One waiting call, as the card shows it. */
export interface CardApproval {
  approvalId: string;
  tool: string;
  args: Record<string, unknown>;
  expiresAt: string;
}

/** An Adaptive Card (1.4, Universal Actions) asking for a decision on one waiting call. */
export function approvalCard(conversationId: string, approval: CardApproval): Record<string, unknown> {
  const data = { conversationId, approvalId: approval.approvalId };
  return {
    type: "AdaptiveCard",
    $schema: "http://adaptivecards.io/schemas/adaptive-card.json",
    version: "1.4",
    body: [
      { type: "TextBlock", weight: "Bolder", text: `${approval.tool} waits for approval`, wrap: true },
      { type: "TextBlock", text: JSON.stringify(approval.args).slice(0, 2_500), wrap: true, fontType: "Monospace" },
      { type: "TextBlock", text: `Until ${approval.expiresAt}`, isSubtle: true, wrap: true },
    ],
    actions: [
      { type: "Action.Execute", title: "Approve", verb: TEAMS_APPROVAL_VERBS.approve, data, style: "positive" },
      { type: "Action.Execute", title: "Reject", verb: TEAMS_APPROVAL_VERBS.reject, data, style: "destructive" },
    ],
  };
}
