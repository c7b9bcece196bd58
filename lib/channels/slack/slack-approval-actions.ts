/** The action ids of the approval buttons: posted by `SlackReplier.requestApproval`, read by `handleSlackInteraction`. */
export const SLACK_APPROVAL_ACTIONS = {
  approve: "threadwise_approval_approve",
  reject: "threadwise_approval_reject",
  edit: "threadwise_approval_edit",
} as const;
