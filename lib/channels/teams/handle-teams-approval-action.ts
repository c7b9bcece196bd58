import { z } from "zod";
import { ValidationError } from "../../errors.js";
import type { ApprovalChoice } from "../../store/approval-store.js";
import {
  decisionRefusal,
  editedArgumentsOf,
  invalidEditText,
  MAX_EDITED_ARGUMENTS_CHARS,
  type ChannelApprovals,
  type ChannelPrincipal,
} from "../channel-decisions.js";
import { jsonResponse, type ChannelResponse } from "../channel-http.js";
import { approvalCard, TEAMS_APPROVAL_VERBS, TEAMS_ARGS_INPUT } from "./teams-approval-card.js";
import { teamsIdentityOf } from "./teams-identity.js";

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
      // Action.Execute merges the card's inputs into its data: the arguments box comes as `args`.
      // No bound here: an edit too long is refused with a note on the card (`editedArgumentsOf`), not as a malformed action.
      data: z.object({ conversationId: z.uuid(), approvalId: z.uuid(), [TEAMS_ARGS_INPUT]: z.string().optional() }),
    }),
  }),
});

/** Whether a verified activity is a card action this handler answers (an invoke must be answered in the request). */
export function isApprovalAction(body: unknown): boolean {
  const b = body as { type?: unknown; name?: unknown } | null;
  return b?.type === "invoke" && b?.name === "adaptiveCard/action";
}

const message = (text: string) => jsonResponse(200, { statusCode: 200, type: "application/vnd.microsoft.activity.message", value: text });
const card = (content: Record<string, unknown>) => jsonResponse(200, { statusCode: 200, type: ADAPTIVE_CARD, value: content });

/**
 * Answers an `adaptiveCard/action` invoke on an approval card, already verified like a message:
 * decides as the clicking user (their tenant must own the conversation; `TEAMS_ROLES` apply),
 * and answers with the refreshed card, so the buttons give way to who decided and when. Edit
 * runs the call with the card's arguments box; an edit that is no JSON object or that the
 * recorded schema refuses refreshes the card with the text as typed and the error.
 */
export async function handleTeamsApprovalAction(body: unknown, approvals: ChannelApprovals): Promise<ChannelResponse> {
  const parsed = invokeSchema.safeParse(body);
  const verb = parsed.success ? parsed.data.value.action.verb : undefined;
  const kind = Object.entries(TEAMS_APPROVAL_VERBS).find(([, v]) => v === verb)?.[0] as keyof typeof TEAMS_APPROVAL_VERBS | undefined;
  if (!parsed.success || !kind)
    return jsonResponse(200, { statusCode: 400, type: "application/vnd.microsoft.error", value: { code: "BadRequest", message: "not an approval action" } });
  const a = parsed.data;
  const identity = teamsIdentityOf(body);
  // The route refuses these first (401); a caller of this function alone is answered as for a malformed action.
  if (identity.kind === "refused")
    return jsonResponse(200, { statusCode: 401, type: "application/vnd.microsoft.error", value: { code: "Unauthorized", message: "no Entra user" } });
  const principal = identity.principal;
  const { conversationId, approvalId, [TEAMS_ARGS_INPUT]: typed } = a.value.action.data;
  let text: string;
  try {
    let choice: ApprovalChoice;
    if (kind === "edit") {
      const edited = editedArgumentsOf(typed);
      if ("error" in edited) return await refusedEdit(approvals, principal, conversationId, approvalId, typed ?? "", edited.error);
      choice = { kind: "edit", args: edited.args };
    } else choice = { kind };
    const result = await approvals.decide(principal, conversationId, approvalId, choice).catch(async (error: unknown) => {
      if (error instanceof ValidationError) return refusedEdit(approvals, principal, conversationId, approvalId, typed ?? "", invalidEditText(error));
      throw error;
    });
    if (!("approval" in result)) return result;
    const d = result.approval.decision;
    const at = d ? ` at ${d.at.toISOString()}` : "";
    text = `${result.approval.tool}: ${result.approval.status}${d && d.kind !== "expire" ? ` by ${d.by.subject}` : ""}${at}.`;
  } catch (error) {
    const refusal = decisionRefusal(error);
    if (!refusal) throw error;
    // A user who may not decide keeps the buttons for those who may: they get a message only.
    if (refusal.code === "forbidden" || refusal.code === "not_found") return message(refusal.text);
    text = refusal.text;
  }
  return card(decidedCard(text));
}

/** The approval's card again, with the edit as typed and what is wrong with it: nothing was decided. */
async function refusedEdit(
  approvals: ChannelApprovals,
  principal: ChannelPrincipal,
  conversationId: string,
  approvalId: string,
  typed: string,
  error: string,
): Promise<ChannelResponse> {
  const approval = await approvals.forDecision(principal, conversationId, approvalId);
  const shown = { approvalId, tool: approval.tool, args: approval.args, expiresAt: approval.deadline.toISOString(), context: approval.context };
  // An edit too long to take is not shown back (a card has a size limit): the box holds the arguments as they were.
  // Arguments sealed at rest are withheld here (no Encryption SDK): the box is then left empty.
  const text = typed.length <= MAX_EDITED_ARGUMENTS_CHARS ? typed : approval.argsWithheld ? "" : JSON.stringify(approval.args, null, 2);
  return card(approvalCard(conversationId, shown, { text, error }));
}
