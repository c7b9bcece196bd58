import type { Db } from "mongodb";
import { ChannelRoles, type GroupDirectory } from "../auth/channel-roles.js";
import type { Caller, ChannelIssuerKind, Principal } from "../auth/principal.js";
import { Approvals, type DecisionResult } from "../approvals/approvals.js";
import { resumeJobOf } from "../approvals/resume-job.js";
import type { Config } from "../config/config.js";
import { ApprovalConflictError, ApprovalExpiredError, ApprovalSupersededError, ForbiddenError, NotFoundError, type ValidationError } from "../errors.js";
import { ApprovalStore, type ApprovalChoice, type ApprovalDocument } from "../store/approval-store.js";
import { ConversationStore } from "../store/conversation-store.js";
import { TurnStore } from "../store/turn-store.js";
import { RetentionPolicy } from "../store/retention.js";
import type { EnqueueTurn } from "../queue/turn-job.js";

/** A channel user, as a verified interaction (a Slack button or modal, a Teams card action) names them. */
export type ChannelPrincipal = Principal & { issuer: "slack" | "teams" };

/** Approvals as a channel user reaches them. */
export interface ChannelApprovals {
  /** Takes the user's decision (`Approvals.decide`). */
  decide(principal: ChannelPrincipal, conversationId: string, approvalId: string, choice: ApprovalChoice): Promise<DecisionResult>;
  /** The approval, when the user may decide it (`Approvals.forDecision`): what an edit form is prefilled with. */
  forDecision(principal: ChannelPrincipal, conversationId: string, approvalId: string): Promise<ApprovalDocument>;
}

/** The longest edited arguments a channel's form takes (JSON text); a longer edit is refused with a note, not parsed. */
export const MAX_EDITED_ARGUMENTS_CHARS = 20_000;

/** The edited arguments as typed in a channel's form (JSON text), or what is wrong with them. */
export function editedArgumentsOf(text: string | undefined): { args: Record<string, unknown> } | { error: string } {
  if (text !== undefined && text.length > MAX_EDITED_ARGUMENTS_CHARS) {
    return { error: `Too long: the arguments may have at most ${MAX_EDITED_ARGUMENTS_CHARS.toLocaleString("en-US")} characters.` };
  }
  let value: unknown;
  try {
    value = JSON.parse(text ?? "");
  } catch {
    return { error: "Not JSON: write the arguments as a JSON object." };
  }
  if (!value || typeof value !== "object" || Array.isArray(value)) return { error: "The arguments must be a JSON object." };
  return { args: value as Record<string, unknown> };
}

/** Edited arguments refused, as a channel shows it under the input: each problem with its path. */
export function invalidEditText(error: ValidationError): string {
  const issues = (error.details ?? []).map((d) => `${d.path.replace(/^args\.?/, "") || "(arguments)"}: ${d.message}`);
  return issues.length > 0 ? issues.join("; ") : error.message;
}

/** Why a channel user's decision was refused. */
export type DecisionRefusalCode = "forbidden" | "not_found" | "approval_conflict" | "approval_superseded" | "approval_expired";

/** A refused decision as a channel tells the user; undefined for an error that is not a refusal. */
export function decisionRefusal(error: unknown): { code: DecisionRefusalCode; text: string } | undefined {
  if (error instanceof ForbiddenError) return { code: "forbidden", text: "You may not decide this approval." };
  if (error instanceof NotFoundError) return { code: "not_found", text: "This approval no longer exists." };
  if (error instanceof ApprovalConflictError) return { code: "approval_conflict", text: `This call was already decided (${error.status}).` };
  if (error instanceof ApprovalSupersededError) return { code: "approval_superseded", text: "A newer question replaced this one; the call will not run." };
  if (error instanceof ApprovalExpiredError) return { code: "approval_expired", text: "This approval expired; the call was not run." };
  return undefined;
}

/**
 * Decisions from Slack and Teams: the conversation must belong to the user's workspace or
 * tenant (else NotFound, as the API answers for another's), and the user's roles are looked up
 * as for a turn (`SLACK_ROLES`, `TEAMS_ROLES`), so an approver role is checked the same way.
 */
export function channelDecisions(deps: { conversations: ConversationStore; approvals: Approvals; roles: ChannelRoles }): ChannelApprovals {
  const callerOf = async (principal: ChannelPrincipal, conversationId: string, approvalId: string): Promise<Caller> => {
    if (principal.tenant === null) throw new NotFoundError(`approval ${approvalId} not found`);
    // The one check (lib/auth/conversation-access.ts), on the principal alone, before any role is looked up:
    // a user of the workspace or tenant whose thread it is.
    await deps.conversations.getFor(conversationId, { principal, roles: [] }, "write");
    return { principal, roles: await deps.roles.rolesOf(principal) };
  };
  return {
    decide: async (principal, conversationId, approvalId, choice) =>
      deps.approvals.decide(conversationId, approvalId, await callerOf(principal, conversationId, approvalId), choice),
    forDecision: async (principal, conversationId, approvalId) =>
      deps.approvals.forDecision(conversationId, approvalId, await callerOf(principal, conversationId, approvalId)),
  };
}

/**
 * Channel decisions as the webhook function takes them: over the stores alone (no app, graph or
 * tool), resuming through the turn queue. An edit is checked against the schema its approval
 * recorded, so no tool is loaded. Roles by group come from the channel's directory, as in the worker; without
 * one (no bot token in the function's secrets) a tenant whose roles name groups is refused with
 * `RoleLookupError` (503).
 */
export function webhookChannelDecisions(
  db: Db,
  config: Pick<Config, "retentionDays" | "auth">,
  enqueue: EnqueueTurn,
  directories: Partial<Record<ChannelIssuerKind, GroupDirectory>> = {},
): ChannelApprovals {
  const approvals = new Approvals({
    store: new ApprovalStore(db),
    turns: new TurnStore(db),
    resume: (approval, key, edits) => enqueue(resumeJobOf(approval, key, edits)),
  });
  return channelDecisions({
    conversations: new ConversationStore(db, new RetentionPolicy(db, { days: config.retentionDays }).periodMs),
    approvals,
    roles: new ChannelRoles(config.auth.channelRoles, directories),
  });
}
