import type { ChannelRoles } from "../auth/channel-roles.js";
import { tenantOwner, type Principal } from "../auth/principal.js";
import type { Approvals, DecisionResult } from "../approvals/approvals.js";
import { NotFoundError } from "../errors.js";
import type { ApprovalChoice } from "../store/approval-store.js";
import type { ConversationStore } from "../store/conversation-store.js";

/** A channel user's decision on an approval, from a verified interaction (a Slack button, a Teams card action). */
export type ChannelDecide = (principal: Principal & { issuer: "slack" | "teams" }, conversationId: string, approvalId: string, choice: ApprovalChoice) => Promise<DecisionResult>;

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
