import { LogLevel, SlackError, WebAPIHTTPError, WebAPIPlatformError, WebClient } from "@slack/web-api";
import { ChannelDeliveryError } from "../../errors.js";
import { turnFailureMessage } from "../failure-message.js";
import { splitText } from "../split-text.js";
import type { ApprovalRequestItem, SlackReplyTarget } from "../../queue/turn-job.js";
import { approvalContextHeading, approvalContextLines } from "../approval-context-text.js";
import { SlackAnswerStream } from "./slack-answer-stream.js";
import { editButtonValue, SLACK_APPROVAL_ACTIONS } from "./slack-approval-actions.js";
import { escapeSlackText } from "./slack-text.js";

/** Slack's Web API base URL; the trailing slash matters to `WebClient`. */
export const DEFAULT_SLACK_API_URL = "https://slack.com/api/";
/**
 * Retries per Web API call. `WebClient`'s own default retries for about 30 minutes, far longer
 * than a worker invocation should wait; a queue retry is the better second chance.
 */
export const DEFAULT_SLACK_RETRIES = 2;
/** Timeout of one Web API request, in milliseconds. */
export const DEFAULT_SLACK_TIMEOUT_MS = 10_000;
/** Slack truncates `chat.postMessage` text past 40,000 characters; longer replies are split below that. */
export const DEFAULT_SLACK_MAX_MESSAGE_CHARS = 39_000;

/**
 * `ok: false` error codes that mean "not now" rather than "never": Slack's side failed or
 * throttled. Every other code (`channel_not_found`, `not_in_channel`, `invalid_auth`, …) is
 * refused again on a retry.
 */
export const SLACK_TRANSIENT_ERRORS: readonly string[] = ["ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout"];

export interface SlackReplierOptions {
  /** Bot token (`xoxb-…`) from the secret store. */
  botToken: string;
  /** Default: {@link DEFAULT_SLACK_API_URL}. Tests point it at a local endpoint. */
  slackApiUrl?: string;
  /** Default: {@link DEFAULT_SLACK_RETRIES}. */
  retries?: number;
  /** Default: {@link DEFAULT_SLACK_TIMEOUT_MS}. */
  timeoutMs?: number;
  /** Default: {@link DEFAULT_SLACK_MAX_MESSAGE_CHARS}. */
  maxMessageChars?: number;
}

export interface SlackBotIdentity {
  teamId: string;
  userId: string;
  botId?: string;
}

/** A Web API client with the bot token, bounded retries and timeouts; one per container and token. */
export function slackWebClient(options: Pick<SlackReplierOptions, "botToken" | "slackApiUrl" | "retries" | "timeoutMs">): WebClient {
  return new WebClient(options.botToken, {
    slackApiUrl: options.slackApiUrl ?? DEFAULT_SLACK_API_URL,
    retryConfig: { retries: options.retries ?? DEFAULT_SLACK_RETRIES, factor: 2, minTimeout: 500, maxTimeout: 4_000 },
    timeout: options.timeoutMs ?? DEFAULT_SLACK_TIMEOUT_MS,
    logLevel: LogLevel.ERROR,
    // Targets come from verified events; a method name must never redirect the token elsewhere.
    allowAbsoluteUrls: false,
  });
}

/**
 * `text` escaped and split into messages of at most `maxChars` escaped characters (an entity is never
 * cut: each piece is escaped after splitting, and split again where escaping made it too long).
 */
function escapedPieces(text: string, maxChars: number, splitAt = maxChars): string[] {
  return splitText(text, splitAt).flatMap((piece) => {
    const escaped = escapeSlackText(piece);
    if (escaped.length <= maxChars || piece.length <= 1) return [escaped];
    return escapedPieces(piece, maxChars, Math.max(1, Math.floor((piece.length * maxChars) / escaped.length)));
  });
}

/** Text for inside a ``` block: escaped, and with a zero-width space between backticks, so no run of them closes the block early. */
function codeBlockText(text: string): string {
  return escapeSlackText(text).replace(/`(?=`)/g, "`\u200b");
}

/** Posts the assistant's answers into the Slack thread a turn came from. Create once per container. */
export class SlackReplier {
  readonly client: WebClient;
  private readonly maxMessageChars: number;

  constructor(options: SlackReplierOptions) {
    this.client = slackWebClient(options);
    this.maxMessageChars = options.maxMessageChars ?? DEFAULT_SLACK_MAX_MESSAGE_CHARS;
  }

  /** Replies in the thread, the text escaped (shown as written, no mention or link of Slack's read in it); returns the `ts` of each message posted. */
  async reply(target: SlackReplyTarget, text: string): Promise<string[]> {
    const posted: string[] = [];
    for (const piece of escapedPieces(text, this.maxMessageChars)) {
      const result = await this.call(() =>
        this.client.chat.postMessage({
          channel: target.channelId,
          thread_ts: target.threadTs,
          text: piece,
          unfurl_links: false,
          unfurl_media: false,
        }),
      );
      posted.push(result.ts ?? "");
    }
    return posted;
  }

  /**
   * Posts the turn's waiting calls in the thread, each with its arguments and Approve / Edit /
   * Reject buttons (`handleSlackInteraction` takes the clicks; Edit opens a modal). Arguments are shown as JSON, cut to fit a section.
   */
  async requestApproval(target: SlackReplyTarget, conversationId: string, approvals: readonly ApprovalRequestItem[]): Promise<string> {
    const blocks = approvals.flatMap((a) => [
      {
        type: "section",
        text: {
          type: "mrkdwn",
          text: `*${a.tool}* waits for approval (until ${a.expiresAt}):\n\`\`\`${codeBlockText(JSON.stringify(a.args).slice(0, 2_500))}\`\`\``,
        },
      },
      // What led to the call, as escaped text in a code block: an output's markup, mentions and links stay inert.
      ...(a.context && a.context.calls.length > 0
        ? [
            {
              type: "section",
              text: {
                type: "mrkdwn",
                text: `${approvalContextHeading(a.context)}\n\`\`\`${codeBlockText(approvalContextLines(a.context).join("\n").slice(0, 2_500))}\`\`\``,
              },
            },
          ]
        : []),
      {
        type: "actions",
        block_id: `approval:${a.approvalId}`,
        elements: [
          {
            type: "button",
            style: "primary",
            text: { type: "plain_text", text: "Approve" },
            action_id: SLACK_APPROVAL_ACTIONS.approve,
            value: `${conversationId}:${a.approvalId}`,
          },
          {
            type: "button",
            text: { type: "plain_text", text: "Edit" },
            action_id: SLACK_APPROVAL_ACTIONS.edit,
            value: editButtonValue(`${conversationId}:${a.approvalId}`, a.args),
          },
          {
            type: "button",
            style: "danger",
            text: { type: "plain_text", text: "Reject" },
            action_id: SLACK_APPROVAL_ACTIONS.reject,
            value: `${conversationId}:${a.approvalId}`,
          },
        ],
      },
    ]);
    const text = `Waiting for approval: ${approvals.map((a) => a.tool).join(", ")}`;
    const result = await this.call(() =>
      this.client.chat.postMessage({ channel: target.channelId, thread_ts: target.threadTs, text, blocks, unfurl_links: false, unfurl_media: false }),
    );
    return result.ts ?? "";
  }

  /** Tells the user, in the thread, that their turn failed. */
  async replyFailure(target: SlackReplyTarget, error: unknown): Promise<string[]> {
    return this.reply(target, turnFailureMessage(error, "slack"));
  }

  /** The turn's answer streamed into the thread as it is written; `claimStream` lets one attempt per turn stream. */
  openStream(target: SlackReplyTarget, recipientUserId: string, claimStream: () => Promise<boolean>): SlackAnswerStream {
    return new SlackAnswerStream(
      {
        client: this.client,
        call: (request) => this.call(request),
        reply: (t, text) => this.reply(t, text),
        replyFailure: (t, error) => this.replyFailure(t, error),
        claimStream,
      },
      target,
      recipientUserId,
    );
  }

  /** `auth.test`: checks the token and names the bot user, whose own messages ingress ignores. */
  async identity(): Promise<SlackBotIdentity> {
    const result = await this.call(() => this.client.auth.test());
    if (!result.team_id || !result.user_id) {
      throw new ChannelDeliveryError("slack auth.test returned no identity", "slack");
    }
    return { teamId: result.team_id, userId: result.user_id, botId: result.bot_id };
  }

  private async call<T>(request: () => Promise<T>): Promise<T> {
    try {
      return await request();
    } catch (error) {
      if (error instanceof WebAPIPlatformError) {
        // Slack's error codes (`channel_not_found`, `invalid_auth`, …) name no content and no secret.
        // A refusal carries Slack's 200 as its status; a transient failure none, as an unreachable Slack.
        const status = SLACK_TRANSIENT_ERRORS.includes(error.data.error ?? "") ? undefined : 200;
        throw new ChannelDeliveryError(`slack refused the call: ${error.data.error}`, "slack", status, { cause: error });
      }
      if (error instanceof WebAPIHTTPError) {
        throw new ChannelDeliveryError("slack answered with an HTTP error", "slack", error.statusCode, { cause: error });
      }
      if (error instanceof SlackError) {
        throw new ChannelDeliveryError("slack could not be reached", "slack", undefined, { cause: error });
      }
      throw error;
    }
  }
}
