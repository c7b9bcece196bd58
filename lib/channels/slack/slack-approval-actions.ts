/** The action ids of the approval buttons: posted by `SlackReplier.requestApproval`, read by `handleSlackInteraction`. */
export const SLACK_APPROVAL_ACTIONS = {
  approve: "threadwise_approval_approve",
  reject: "threadwise_approval_reject",
  edit: "threadwise_approval_edit",
} as const;

/** The longest value Slack takes on a button. */
const SLACK_BUTTON_VALUE_MAX_CHARS = 2_000;

/**
 * The Edit button's value, written by the worker when it asks: the conversation and approval ids, then the
 * arguments as indented JSON, as the edit modal is prefilled with them, when they fit the button. The webhook
 * cannot read arguments sealed at rest (it carries no Encryption SDK), so this is where it takes them from
 * (docs/security.md, "How the webhooks take approvals without clear contents").
 */
export function editButtonValue(ids: string, args: Record<string, unknown>): string {
  const value = `${ids}\n${JSON.stringify(args, null, 2)}`;
  return value.length <= SLACK_BUTTON_VALUE_MAX_CHARS ? value : ids;
}
