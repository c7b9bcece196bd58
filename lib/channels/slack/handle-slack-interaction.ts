import { z } from "zod";
import { slackPrincipal } from "../../auth/principal.js";
import {
  ApprovalConflictError,
  ApprovalExpiredError,
  ApprovalSupersededError,
  ChannelAuthenticationError,
  ForbiddenError,
  NotFoundError,
  type ChannelAuthenticationReason,
} from "../../errors.js";
import type { ApprovalChoice } from "../../store/approval-store.js";
import type { ChannelDecide } from "../channel-decisions.js";
import { emptyResponse, jsonResponse, type ChannelRequest, type ChannelResponse } from "../channel-http.js";
import { verifySlackRequest } from "./verify-slack-request.js";
import { SLACK_APPROVAL_ACTIONS } from "./slack-approval-actions.js";

/** Where Slack's `response_url`s live; a signed payload naming any other is not followed. */
export const DEFAULT_SLACK_RESPONSE_URL_PREFIX = "https://hooks.slack.com/";
/** Slack's prefix, or the origin of a stand-in Web API (`SLACK_API_URL`), whose `response_url`s come from the same place. */
export function slackResponseUrlPrefix(slackApiUrl: string | undefined): string {
  return slackApiUrl ? `${new URL(slackApiUrl).origin}/` : DEFAULT_SLACK_RESPONSE_URL_PREFIX;
}

/** What became of one interaction; for logs (reasons and numbers, never text). */
export type SlackInteractionOutcome =
  | { kind: "rejected"; reason: ChannelAuthenticationReason }
  | { kind: "invalid" }
  | { kind: "ignored" }
  | { kind: "decided"; status: string; decided: boolean }
  | { kind: "refused"; code: "forbidden" | "not_found" | "approval_conflict" | "approval_superseded" | "approval_expired" };

const payloadSchema = z.object({
  type: z.literal("block_actions"),
  user: z.object({ id: z.string().min(1).max(64) }),
  team: z.object({ id: z.string().min(1).max(64) }),
  response_url: z.url().max(2_000).optional(),
  actions: z
    .array(z.object({ action_id: z.string().max(255), value: z.string().max(2_000).optional() }))
    .min(1)
    .max(5),
});

/** A button's value: the conversation and the approval it decides. */
const buttonValue = z.string().regex(/^[0-9a-f-]{36}:[0-9a-f-]{36}$/);

export interface HandleSlackInteractionInput {
  request: ChannelRequest;
  signingSecret: string;
  decide: ChannelDecide;
  /** Default: {@link DEFAULT_SLACK_RESPONSE_URL_PREFIX}. */
  responseUrlPrefix?: string;
  fetch?: typeof fetch;
  now?: Date;
  onOutcome?: (outcome: SlackInteractionOutcome) => void;
}

/**
 * `POST /slack/interactivity`: a click on an approval button. Verified exactly as events are
 * (signature over the raw body, timestamp window), then decided as the clicking user, whose
 * workspace must own the conversation and whose roles are looked up as for a turn. The message
 * is replaced through Slack's `response_url` with who decided and when; a user who may not decide
 * gets a note only they see. Slack wants 200 within three seconds: the answer is empty.
 */
export async function handleSlackInteraction(input: HandleSlackInteractionInput): Promise<ChannelResponse> {
  const report = input.onOutcome ?? (() => undefined);
  try {
    verifySlackRequest({ ...input.request, signingSecret: input.signingSecret, now: input.now });
  } catch (error) {
    if (!(error instanceof ChannelAuthenticationError)) throw error;
    report({ kind: "rejected", reason: error.reason });
    return jsonResponse(401, { error: { code: "unauthenticated", message: "invalid slack signature" } });
  }
  let json: unknown;
  try {
    json = JSON.parse(new URLSearchParams(input.request.rawBody).get("payload") ?? "");
  } catch {
    report({ kind: "invalid" });
    return jsonResponse(400, { error: { code: "invalid_request", message: "payload is not JSON" } });
  }
  const parsed = payloadSchema.safeParse(json);
  const action = parsed.success ? parsed.data.actions[0] : undefined;
  const choice: ApprovalChoice | undefined =
    action?.action_id === SLACK_APPROVAL_ACTIONS.approve
      ? { kind: "approve" }
      : action?.action_id === SLACK_APPROVAL_ACTIONS.reject
        ? { kind: "reject" }
        : undefined;
  const value = buttonValue.safeParse(action?.value);
  if (!parsed.success || !choice || !value.success) {
    // Other interactions (shortcuts, other apps' buttons) are not ours to answer.
    report({ kind: "ignored" });
    return emptyResponse(200);
  }
  const payload = parsed.data;
  const [conversationId, approvalId] = value.data.split(":");
  const principal = slackPrincipal(payload.team.id, payload.user.id);
  let message: Record<string, unknown>;
  try {
    const result = await input.decide(principal, conversationId, approvalId, choice);
    report({ kind: "decided", status: result.approval.status, decided: result.decided });
    const d = result.approval.decision;
    const by = d && d.kind !== "expire" ? `<@${d.by.subject}>` : "nobody";
    const at = d ? d.at.toISOString() : "";
    message = { replace_original: true, text: `${result.approval.tool}: ${result.approval.status} by ${by} at ${at}.` };
  } catch (error) {
    const refusal = refusalOf(error);
    if (!refusal) throw error;
    report({ kind: "refused", code: refusal.code });
    message =
      refusal.code === "forbidden" || refusal.code === "not_found"
        ? { response_type: "ephemeral", replace_original: false, text: refusal.text }
        : { replace_original: true, text: refusal.text };
  }
  await respond(input, payload.response_url, message);
  return emptyResponse(200);
}

function refusalOf(error: unknown): { code: Extract<SlackInteractionOutcome, { kind: "refused" }>["code"]; text: string } | undefined {
  if (error instanceof ForbiddenError) return { code: "forbidden", text: "You may not decide this approval." };
  if (error instanceof NotFoundError) return { code: "not_found", text: "This approval no longer exists." };
  if (error instanceof ApprovalConflictError) return { code: "approval_conflict", text: `This call was already decided (${error.status}).` };
  if (error instanceof ApprovalSupersededError) return { code: "approval_superseded", text: "A newer question replaced this one; the call will not run." };
  if (error instanceof ApprovalExpiredError) return { code: "approval_expired", text: "This approval expired; the call was not run." };
  return undefined;
}

/** Posts to the interaction's `response_url`, when it is Slack's; a failure only leaves the buttons in place. */
async function respond(input: HandleSlackInteractionInput, url: string | undefined, message: Record<string, unknown>): Promise<void> {
  if (!url?.startsWith(input.responseUrlPrefix ?? DEFAULT_SLACK_RESPONSE_URL_PREFIX)) return;
  await (input.fetch ?? fetch)(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(message),
    signal: AbortSignal.timeout(5_000),
  }).catch(() => undefined);
}
