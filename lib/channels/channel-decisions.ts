import type { Db } from "mongodb";
import { ChannelRoles, type GroupDirectory } from "../auth/channel-roles.js";
import { tenantOwner, type ChannelIssuerKind, type Principal } from "../auth/principal.js";
import { Approvals, type DecisionResult } from "../approvals/approvals.js";
import { resumeJobOf } from "../approvals/resume-job.js";
import type { Config } from "../config/config.js";
import { NotFoundError } from "../errors.js";
import { ApprovalStore, type ApprovalChoice } from "../store/approval-store.js";
import { ConversationStore } from "../store/conversation-store.js";
import { TurnStore } from "../store/turn-store.js";
import { RetentionPolicy } from "../store/retention.js";
import type { EnqueueTurn } from "../queue/turn-job.js";

/** A channel user's decision on an approval, from a verified interaction (a Slack button, a Teams card action). */
export type ChannelDecide = (
  principal: Principal & { issuer: "slack" | "teams" },
  conversationId: string,
  approvalId: string,
  choice: ApprovalChoice,
) => Promise<DecisionResult>;

/**
 * Decisions from Slack and Teams: the conversation must belong to the user's workspace or
 * tenant (else NotFound, as the API answers for another's), and the user's roles are looked up
 * as for a turn (`SLACK_ROLES`, `TEAMS_ROLES`), so an approver role is checked the same way.
 */
export function channelDecisions(deps: { conversations: ConversationStore; approvals: Approvals; roles: ChannelRoles }): ChannelDecide {
  return async (principal, conversationId, approvalId, choice) => {
    if (principal.tenant === null) throw new NotFoundError(`approval ${approvalId} not found`);
    await deps.conversations.getOwned(conversationId, tenantOwner(principal.issuer, principal.tenant));
    const caller = { principal, roles: await deps.roles.rolesOf(principal) };
    return deps.approvals.decide(conversationId, approvalId, caller, choice);
  };
}

/**
 * Channel decisions as the webhook function takes them: over the stores alone (no app, graph or
 * tool), resuming through the turn queue. Buttons only approve or reject, so no edit reaches
 * the tools' schemas. Roles by group come from the channel's directory, as in the worker; without
 * one (no bot token in the function's secrets) a tenant whose roles name groups is refused with
 * `RoleLookupError` (503).
 */
export function webhookChannelDecisions(
  db: Db,
  config: Pick<Config, "retentionDays" | "auth">,
  enqueue: EnqueueTurn,
  directories: Partial<Record<ChannelIssuerKind, GroupDirectory>> = {},
): ChannelDecide {
  const approvals = new Approvals({
    store: new ApprovalStore(db),
    turns: new TurnStore(db),
    argumentIssues: () => [{ path: "args", message: "edits are made through the API or the console" }],
    resume: (approval, key) => enqueue(resumeJobOf(approval, key)),
  });
  return channelDecisions({
    conversations: new ConversationStore(db, new RetentionPolicy(db, { days: config.retentionDays }).periodMs),
    approvals,
    roles: new ChannelRoles(config.auth.channelRoles, directories),
  });
}
