import { z } from "zod";
import { teamsPrincipal } from "../../auth/principal.js";
import { ApprovalConflictError, ApprovalExpiredError, ApprovalSupersededError, ForbiddenError, NotFoundError } from "../../errors.js";
import type { ApprovalChoice } from "../../store/approval-store.js";
import type { ChannelDecide } from "../channel-decisions.js";
import { jsonResponse, type ChannelResponse } from "../channel-http.js";
import { TEAMS_APPROVAL_VERBS } from "./teams-approval-card.js";

const ADAPTIVE_CARD = "application/vnd.microsoft.card.adaptive";

/** The card that replaces the buttons once decided (or refused): what happened, by whom, when. */
function decidedCard(text: string): Record<string, unknown> {
  return {
    type: "AdaptiveCard",
    $schema: "http://adaptivecards.io/schemas/adaptive-card.json",
    version: "1.4",
    body: [{ type: "TextBlock", text, wrap: true }],
  };
}

const invokeSchema = z.object({
  type: z.literal("invoke"),
  name: z.literal("adaptiveCard/action"),
  from: z.object({ id: z.string().min(1).max(200), aadObjectId: z.string().max(100).optional() }),
  conversation: z.object({ tenantId: z.string().max(100).optional() }),
  channelData: z.object({ tenant: z.object({ id: z.string().min(1).max(100) }).optional() }).optional(),
  value: z.object({
    action: z.object({
      verb: z.string().max(100),
      data: z.object({ conversationId: z.uuid(), approvalId: z.uuid() }),
    }),
  }),
});

/** Whether a verified activity is a card action this handler answers (an invoke must be answered in the request). */
export function isApprovalAction(body: unknown): boolean {
  const b = body as { type?: unknown; name?: unknown } | null;
  return b?.type === "invoke" && b?.name === "adaptiveCard/action";
}

/**
 * Answers an `adaptiveCard/action` invoke on an approval card, already verified like a message:
 * decides as the clicking user (their tenant must own the conversation; `TEAMS_ROLES` apply),
 * and answers with the refreshed card, so the buttons give way to who decided and when.
 */
export async function handleTeamsApprovalAction(body: unknown, decide: ChannelDecide): Promise<ChannelResponse> {
  const parsed = invokeSchema.safeParse(body);
  const verb = parsed.success ? parsed.data.value.action.verb : undefined;
  const choice: ApprovalChoice | undefined =
    verb === TEAMS_APPROVAL_VERBS.approve ? { kind: "approve" } : verb === TEAMS_APPROVAL_VERBS.reject ? { kind: "reject" } : undefined;
  if (!parsed.success || !choice)
    return jsonResponse(200, { statusCode: 400, type: "application/vnd.microsoft.error", value: { code: "BadRequest", message: "not an approval action" } });
  const a = parsed.data;
  const tenant = a.channelData?.tenant?.id ?? a.conversation.tenantId ?? null;
  const principal = teamsPrincipal(tenant, a.from.aadObjectId ?? a.from.id);
  const { conversationId, approvalId } = a.value.action.data;
  let text: string;
  try {
    const result = await decide(principal, conversationId, approvalId, choice);
    const d = result.approval.decision;
    const at = d ? ` at ${d.at.toISOString()}` : "";
    text = `${result.approval.tool}: ${result.approval.status}${d && d.kind !== "expire" ? ` by ${d.by.subject}` : ""}${at}.`;
  } catch (error) {
    // A user who may not decide keeps the buttons for those who may: they get a message only.
    if (error instanceof ForbiddenError)
      return jsonResponse(200, { statusCode: 200, type: "application/vnd.microsoft.activity.message", value: "You may not decide this approval." });
    if (error instanceof NotFoundError)
      return jsonResponse(200, { statusCode: 200, type: "application/vnd.microsoft.activity.message", value: "This approval no longer exists." });
    if (error instanceof ApprovalConflictError) text = `This call was already decided (${error.status}).`;
    else if (error instanceof ApprovalSupersededError) text = "A newer question replaced this one; the call will not run.";
    else if (error instanceof ApprovalExpiredError) text = "This approval expired; the call was not run.";
    else throw error;
  }
  return jsonResponse(200, { statusCode: 200, type: ADAPTIVE_CARD, value: decidedCard(text) });
}
