import { z } from "zod";
import type { WebClient } from "@slack/web-api";
import type { ApprovalDocument } from "../../store/approval-store.js";
import { slackWebClient } from "./slack-replier.js";

/** The edit modal's ids: its `callback_id`, and the block and action of its one input (the arguments as JSON). */
export const SLACK_EDIT_MODAL = { callbackId: "threadwise_approval_edit", blockId: "args", actionId: "args" } as const;
/** Slack's limit on a `plain_text_input`: longer arguments are edited through the API or the console. */
export const SLACK_INPUT_MAX_CHARS = 3_000;
/**
 * Web API calls in the interactivity request: Slack wants its answer within three seconds and a
 * `trigger_id` is good for three, so there is no time for a retry.
 */
export const SLACK_MODAL_TIMEOUT_MS = 2_500;

/** What the slack function does with the bot token on an edit: open the modal, and update the approval message afterwards. */
export interface SlackViews {
  open(triggerId: string, view: Record<string, unknown>): Promise<void>;
  /** Replaces the message's text and drops its buttons (`blocks: []`; without it Slack keeps them). */
  updateMessage(channel: string, ts: string, text: string): Promise<void>;
}

/** `views.open` and `chat.update` with the bot token (neither needs a scope beyond `chat:write`). */
export function slackViews(options: { botToken: string; slackApiUrl?: string }): SlackViews {
  const client: WebClient = slackWebClient({ ...options, retries: 0, timeoutMs: SLACK_MODAL_TIMEOUT_MS });
  return {
    open: async (trigger_id, view) => void (await client.views.open({ trigger_id, view: view as never })),
    updateMessage: async (channel, ts, text) => void (await client.chat.update({ channel, ts, text, blocks: [] })),
  };
}

/** What the modal carries to its submission: the approval, and the message to update once it is decided. */
const metadataSchema = z.object({ c: z.uuid(), a: z.uuid(), ch: z.string().max(64).optional(), ts: z.string().max(64).optional() });
export type SlackEditTarget = { conversationId: string; approvalId: string; channel?: string; ts?: string };

/** The arguments as the modal shows them; undefined when they do not fit Slack's input. */
export function editableArguments(approval: Pick<ApprovalDocument, "args">): string | undefined {
  const text = JSON.stringify(approval.args, null, 2);
  return text.length <= SLACK_INPUT_MAX_CHARS ? text : undefined;
}

/** The modal: the call's tool, its arguments as editable JSON, and a submit that runs the call with them. */
export function editModal(approval: Pick<ApprovalDocument, "tool" | "deadline">, argumentsText: string, target: SlackEditTarget): Record<string, unknown> {
  const metadata = { c: target.conversationId, a: target.approvalId, ...(target.channel && { ch: target.channel }), ...(target.ts && { ts: target.ts }) };
  return {
    type: "modal",
    callback_id: SLACK_EDIT_MODAL.callbackId,
    private_metadata: JSON.stringify(metadata),
    title: { type: "plain_text", text: "Edit the call" },
    submit: { type: "plain_text", text: "Run with these" },
    close: { type: "plain_text", text: "Cancel" },
    blocks: [
      { type: "section", text: { type: "mrkdwn", text: `*${approval.tool}* waits for approval (until ${approval.deadline.toISOString()}).` } },
      {
        type: "input",
        block_id: SLACK_EDIT_MODAL.blockId,
        label: { type: "plain_text", text: "Arguments (JSON)" },
        element: {
          type: "plain_text_input",
          action_id: SLACK_EDIT_MODAL.actionId,
          multiline: true,
          initial_value: argumentsText,
          max_length: SLACK_INPUT_MAX_CHARS,
        },
      },
    ],
  };
}

/** The approval and message a submitted modal names; undefined for metadata that is not ours. */
export function editTargetOf(privateMetadata: string): SlackEditTarget | undefined {
  let json: unknown;
  try {
    json = JSON.parse(privateMetadata);
  } catch {
    return undefined;
  }
  const parsed = metadataSchema.safeParse(json);
  if (!parsed.success) return undefined;
  const { c, a, ch, ts } = parsed.data;
  return { conversationId: c, approvalId: a, channel: ch, ts };
}
