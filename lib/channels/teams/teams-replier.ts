import { z } from "zod";
import { ChannelDeliveryError } from "../../errors.js";
import { turnFailureMessage } from "../failure-message.js";
import { splitText } from "../split-text.js";
import type { Clock } from "../../clock.js";
import type { TeamsReplyTarget } from "../../queue/turn-job.js";
import { approvalCard, type CardApproval } from "./teams-approval-card.js";
import type { BotConnectorTokenProvider } from "./bot-connector-token-provider.js";
import { TeamsAnswerStream } from "./teams-answer-stream.js";

/** Timeout of one Bot Connector request, in milliseconds. */
export const DEFAULT_BOT_CONNECTOR_TIMEOUT_MS = 10_000;
/**
 * Longest text per reply activity. Teams refuses activities over about 28 KB; this leaves room
 * for the envelope and multi-byte characters.
 */
export const DEFAULT_TEAMS_MAX_MESSAGE_CHARS = 12_000;

const resourceResponseSchema = z.object({ id: z.string().optional() });

export interface TeamsReplierOptions {
  tokens: BotConnectorTokenProvider;
  /** Default: {@link DEFAULT_BOT_CONNECTOR_TIMEOUT_MS}. */
  timeoutMs?: number;
  /** Default: {@link DEFAULT_TEAMS_MAX_MESSAGE_CHARS}. */
  maxMessageChars?: number;
  /** Least time between two streaming updates. Default: `DEFAULT_TEAMS_STREAM_INTERVAL_MS`. */
  streamIntervalMs?: number;
  /** What a stream's two-minute limit is measured with. Default: the system clock. */
  clock?: Pick<Clock, "now">;
}

/**
 * Answers in the Teams conversation a turn came from, through the Bot Connector REST API
 * (`POST {serviceUrl}/v3/conversations/{id}/activities/{activityId}`). Create once per container.
 */
export class TeamsReplier {
  private readonly tokens: BotConnectorTokenProvider;
  private readonly timeoutMs: number;
  private readonly maxMessageChars: number;
  private readonly streamIntervalMs: number | undefined;
  private readonly clock: Pick<Clock, "now"> | undefined;

  constructor(options: TeamsReplierOptions) {
    this.streamIntervalMs = options.streamIntervalMs;
    this.clock = options.clock;
    this.tokens = options.tokens;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_BOT_CONNECTOR_TIMEOUT_MS;
    this.maxMessageChars = options.maxMessageChars ?? DEFAULT_TEAMS_MAX_MESSAGE_CHARS;
  }

  /** Replies to the activity; returns the id of each activity posted. */
  async reply(target: TeamsReplyTarget, text: string): Promise<string[]> {
    const ids: string[] = [];
    for (const piece of splitText(text, this.maxMessageChars))
      ids.push(await this.postActivity(target, { type: "message", text: piece, textFormat: "markdown" }));
    return ids;
  }

  /**
   * The turn's answer streamed into a 1:1 chat (`conversationType` personal); undefined elsewhere
   * (group chats and channels take one message). `claimStream` lets one attempt per turn stream.
   */
  openStream(target: TeamsReplyTarget, claimStream: () => Promise<boolean>): TeamsAnswerStream | undefined {
    if (target.conversationType !== "personal") return undefined;
    return new TeamsAnswerStream(
      {
        post: (t, activity) => this.postActivity(t, activity),
        reply: (t, text) => this.reply(t, text),
        replyFailure: (t, error) => this.replyFailure(t, error),
        claimStream,
        intervalMs: this.streamIntervalMs,
        now: this.clock && (() => this.clock!.now().getTime()),
      },
      target,
    );
  }

  /** Posts one activity in reply to the target's, addressed as the Bot Connector wants; returns its id. */
  private async postActivity(target: TeamsReplyTarget, fields: Record<string, unknown>): Promise<string> {
    const url =
      `${target.serviceUrl.replace(/\/+$/, "")}/v3/conversations/${encodeURIComponent(target.conversationId)}` +
      `/activities/${encodeURIComponent(target.activityId)}`;
    return this.post(url, {
      ...fields,
      from: { id: target.botId, name: target.botName },
      recipient: { id: target.userId },
      conversation: { id: target.conversationId, tenantId: target.tenantId },
      replyToId: target.activityId,
    });
  }

  /** Posts one Adaptive Card per waiting call, with `Action.Execute` Approve and Reject (`handleTeamsApprovalAction` takes them). */
  async requestApproval(target: TeamsReplyTarget, conversationId: string, approvals: readonly CardApproval[]): Promise<string> {
    const url =
      `${target.serviceUrl.replace(/\/+$/, "")}/v3/conversations/${encodeURIComponent(target.conversationId)}` +
      `/activities/${encodeURIComponent(target.activityId)}`;
    return this.post(url, {
      type: "message",
      text: `Waiting for approval: ${approvals.map((a) => a.tool).join(", ")}`,
      attachments: approvals.map((a) => ({ contentType: "application/vnd.microsoft.card.adaptive", content: approvalCard(conversationId, a) })),
      from: { id: target.botId, name: target.botName },
      recipient: { id: target.userId },
      conversation: { id: target.conversationId, tenantId: target.tenantId },
      replyToId: target.activityId,
    });
  }

  /** Tells the user, in the conversation, that their turn failed. */
  async replyFailure(target: TeamsReplyTarget, error: unknown): Promise<string[]> {
    return this.reply(target, turnFailureMessage(error, "teams"));
  }

  private async post(url: string, activity: object): Promise<string> {
    let response = await this.send(url, activity, await this.tokens.token());
    if (response.status === 401) {
      // A token revoked or rotated before its stated expiry: fetch a fresh one once.
      this.tokens.invalidate();
      response = await this.send(url, activity, await this.tokens.token());
    }
    if (!response.ok) throw new ChannelDeliveryError("bot connector refused the reply", "teams", response.status);
    const parsed = resourceResponseSchema.safeParse(await response.json().catch(() => ({})));
    return parsed.success ? (parsed.data.id ?? "") : "";
  }

  private async send(url: string, activity: object, token: string): Promise<Response> {
    try {
      return await fetch(url, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify(activity),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (error) {
      throw new ChannelDeliveryError("bot connector unreachable", "teams", undefined, { cause: error });
    }
  }
}
