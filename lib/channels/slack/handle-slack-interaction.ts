import { z } from "zod";
import { slackPrincipal } from "../../auth/principal.js";
import { ChannelAuthenticationError, ValidationError, type ChannelAuthenticationReason } from "../../errors.js";
import type { DecisionResult } from "../../approvals/approvals.js";
import { decisionRefusal, editedArgumentsOf, invalidEditText, type ChannelApprovals, type DecisionRefusalCode } from "../channel-decisions.js";
import { closedApprovalError } from "../../store/approval-store.js";
import { emptyResponse, jsonResponse, type ChannelRequest, type ChannelResponse } from "../channel-http.js";
import { verifySlackRequest } from "./verify-slack-request.js";
import { SLACK_APPROVAL_ACTIONS } from "./slack-approval-actions.js";
import { editableArguments, editModal, editTargetOf, SLACK_EDIT_MODAL, type SlackEditTarget, type SlackViews } from "./slack-approval-modal.js";

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
  | { kind: "editing"; opened: boolean }
  | { kind: "edit_refused"; code: "invalid_arguments" | DecisionRefusalCode }
  | { kind: "refused"; code: DecisionRefusalCode };

const blockActionsSchema = z.object({
  type: z.literal("block_actions"),
  /** `team_id`: the user's own team, which in a Slack Connect channel is not the host's. */
  user: z.object({ id: z.string().min(1).max(64), team_id: z.string().min(1).max(64).optional() }),
  team: z.object({ id: z.string().min(1).max(64) }),
  response_url: z.url().max(2_000).optional(),
  trigger_id: z.string().max(255).optional(),
  /** The message the buttons are on: an edit updates it once the modal is submitted. */
  container: z.object({ channel_id: z.string().max(64).optional(), message_ts: z.string().max(64).optional() }).optional(),
  actions: z
    .array(z.object({ action_id: z.string().max(255), value: z.string().max(2_000).optional() }))
    .min(1)
    .max(5),
});

const viewSubmissionSchema = z.object({
  type: z.literal("view_submission"),
  user: z.object({ id: z.string().min(1).max(64), team_id: z.string().min(1).max(64).optional() }),
  team: z
    .object({ id: z.string().min(1).max(64) })
    .nullable()
    .optional(),
  view: z.object({
    callback_id: z.literal(SLACK_EDIT_MODAL.callbackId),
    private_metadata: z.string().max(3_000),
    // No bound on the value here: an edit too long is answered under the input (`editedArgumentsOf`), not taken for another app's modal.
    state: z.object({ values: z.record(z.string(), z.record(z.string(), z.object({ value: z.string().nullable().optional() }))) }),
  }),
});

/** A button's value: the conversation and the approval it decides; Edit's, then the arguments to prefill (`editButtonValue`). */
const BUTTON_VALUE = /^([0-9a-f-]{36}):([0-9a-f-]{36})(?:\n([\s\S]*))?$/;

export interface HandleSlackInteractionInput {
  request: ChannelRequest;
  signingSecret: string;
  approvals: ChannelApprovals;
  /** Opens the edit modal and updates the message after an edit (the bot token's); absent: the Edit button says editing is off. */
  views?: SlackViews;
  /** Default: {@link DEFAULT_SLACK_RESPONSE_URL_PREFIX}. */
  responseUrlPrefix?: string;
  fetch?: typeof fetch;
  now?: Date;
  onOutcome?: (outcome: SlackInteractionOutcome) => void;
}

/**
 * `POST /slack/interactivity`: a click on an approval button, or the submission of the edit
 * modal. Verified exactly as events are (signature over the raw body, timestamp window), then
 * decided as the clicking user, whose workspace must own the conversation and whose roles are
 * looked up as for a turn. Approve and Reject replace the message through Slack's `response_url`
 * with who decided and when; Edit opens a modal (`views.open`) with the arguments as JSON, and
 * its submission is answered with `response_action: "errors"` when they are not valid, or else
 * closes the modal and updates the message (`chat.update`). A user who may not decide gets a
 * note only they see. Slack wants 200 within three seconds.
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
  const submission = viewSubmissionSchema.safeParse(json);
  if (submission.success) return submitEdit(input, submission.data, report);
  const parsed = blockActionsSchema.safeParse(json);
  const action = parsed.success ? parsed.data.actions[0] : undefined;
  const value = BUTTON_VALUE.exec(action?.value ?? "");
  const kind = Object.entries(SLACK_APPROVAL_ACTIONS).find(([, id]) => id === action?.action_id)?.[0] as keyof typeof SLACK_APPROVAL_ACTIONS | undefined;
  if (!parsed.success || !kind || !value) {
    // Other interactions (shortcuts, other apps' buttons) are not ours to answer.
    report({ kind: "ignored" });
    return emptyResponse(200);
  }
  const payload = parsed.data;
  const [, conversationId, approvalId, shown] = value;
  // The user's own team: a guest from another organisation is not the host workspace's user, so cannot decide its approvals.
  const principal = slackPrincipal(payload.user.team_id ?? payload.team.id, payload.user.id);
  let message: Record<string, unknown>;
  try {
    if (kind === "edit") {
      const target = { conversationId, approvalId, channel: payload.container?.channel_id, ts: payload.container?.message_ts };
      const note = await openEditor(input, payload, target, shown);
      report({ kind: "editing", opened: note === undefined });
      if (note === undefined) return emptyResponse(200);
      message = { response_type: "ephemeral", replace_original: false, text: note };
    } else {
      const result = await input.approvals.decide(principal, conversationId, approvalId, { kind });
      report({ kind: "decided", status: result.approval.status, decided: result.decided });
      message = { replace_original: true, text: decidedText(result) };
    }
  } catch (error) {
    const refusal = decisionRefusal(error);
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

/** What the message says once decided: the outcome, who and when. */
function decidedText(result: DecisionResult): string {
  const d = result.approval.decision;
  const by = d && d.kind !== "expire" ? `<@${d.by.subject}>` : "nobody";
  const at = d ? d.at.toISOString() : "";
  return `${result.approval.tool}: ${result.approval.status} by ${by} at ${at}.`;
}

/**
 * Opens the edit modal for a user who may decide the approval (refusals throw as for a
 * decision); returns the note to show instead when it cannot be opened.
 */
async function openEditor(
  input: HandleSlackInteractionInput,
  payload: z.infer<typeof blockActionsSchema>,
  target: SlackEditTarget,
  shown: string | undefined,
): Promise<string | undefined> {
  const approval = await input.approvals.forDecision(
    slackPrincipal(payload.user.team_id ?? payload.team.id, payload.user.id),
    target.conversationId,
    target.approvalId,
  );
  // A call no longer waiting is answered as a decision on it would be.
  if (approval.status !== "pending") throw closedApprovalError(approval);
  // Arguments sealed at rest are withheld here (a webhook): the modal takes them from the button the worker wrote.
  const text = approval.argsWithheld ? shown || undefined : editableArguments(approval);
  if (!input.views || !payload.trigger_id) return "Editing from Slack is not set up here: edit this call in the console or through the API.";
  if (text === undefined) return "These arguments are too long to edit in Slack: edit this call in the console or through the API.";
  const opened = await input.views.open(payload.trigger_id, editModal(approval, text, target)).then(
    () => true,
    () => false,
  );
  return opened ? undefined : "The editor could not be opened; try Edit again.";
}

/** The edit modal submitted: the decision, or the errors Slack shows under the input (the modal stays open). */
async function submitEdit(
  input: HandleSlackInteractionInput,
  payload: z.infer<typeof viewSubmissionSchema>,
  report: (outcome: SlackInteractionOutcome) => void,
): Promise<ChannelResponse> {
  const target = editTargetOf(payload.view.private_metadata);
  const team = payload.user.team_id ?? payload.team?.id;
  if (!target || !team) {
    report({ kind: "ignored" });
    return emptyResponse(200);
  }
  const errors = (code: "invalid_arguments" | DecisionRefusalCode, text: string) => {
    report({ kind: "edit_refused", code });
    return jsonResponse(200, { response_action: "errors", errors: { [SLACK_EDIT_MODAL.blockId]: text.slice(0, 1_000) } });
  };
  const edited = editedArgumentsOf(payload.view.state.values[SLACK_EDIT_MODAL.blockId]?.[SLACK_EDIT_MODAL.actionId]?.value ?? undefined);
  if ("error" in edited) return errors("invalid_arguments", edited.error);
  let result: DecisionResult;
  try {
    result = await input.approvals.decide(slackPrincipal(team, payload.user.id), target.conversationId, target.approvalId, { kind: "edit", args: edited.args });
  } catch (error) {
    if (error instanceof ValidationError) return errors("invalid_arguments", invalidEditText(error));
    const refusal = decisionRefusal(error);
    if (!refusal) throw error;
    return errors(refusal.code, refusal.text);
  }
  report({ kind: "decided", status: result.approval.status, decided: result.decided });
  // The decision stands whether or not the message could be updated: a failure only leaves the buttons.
  if (target.channel && target.ts) await input.views?.updateMessage(target.channel, target.ts, decidedText(result)).catch(() => undefined);
  return emptyResponse(200);
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
