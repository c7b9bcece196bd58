import { z } from "zod";
import { ValidationError } from "../../errors.js";
import { slackPrincipal, tenantOwner } from "../../auth/principal.js";
import type { SlackTurnJob } from "../../queue/turn-job.js";
import { issueDetails } from "../../validation.js";
import { unescapeSlackText } from "./slack-text.js";
import { SLACK_IDENTITY_REFUSALS, slackIdentityOf } from "./slack-identity.js";

/**
 * Message subtypes that still carry text a person wrote. Every other subtype (edits,
 * deletions, joins, topic changes, bot posts, …) is not a question for the assistant.
 */
export const SLACK_USER_TEXT_SUBTYPES: readonly string[] = ["file_share", "thread_broadcast"];

export const SLACK_IGNORE_REASONS = {
  unsupportedEnvelope: "unsupported_envelope",
  unsupportedEvent: "unsupported_event",
  botMessage: "bot_message",
  ownMessage: "own_message",
  notUserText: "not_user_text",
  notDirectMessage: "not_direct_message",
  empty: "empty",
  /** A Slack Connect message that does not say which team its user is of (`slackIdentityOf`). */
  unknownTeam: SLACK_IDENTITY_REFUSALS.unknownTeam,
} as const;
export type SlackIgnoreReason = (typeof SLACK_IGNORE_REASONS)[keyof typeof SLACK_IGNORE_REASONS];

/** A person's message to the assistant, as the turn needs it. */
export interface SlackUserMessage {
  /** The workspace the app is installed in (`team_id`): it owns the conversation. */
  teamId: string;
  channelId: string;
  userId: string;
  /** The user's own team (`slackIdentityOf`): the host's, or in a Slack Connect channel their organisation's. */
  userTeamId: string;
  /** Text with the bot's mention removed; never blank. */
  text: string;
  ts: string;
  /** Thread root: the message's own `ts` when it starts a thread. */
  threadTs: string;
}

/** What one Events API delivery asks of us. */
export type SlackDelivery =
  | { kind: "url_verification"; challenge: string }
  | { kind: "ignore"; reason: SlackIgnoreReason }
  | { kind: "message"; message: SlackUserMessage };

const typeOnly = z.object({ type: z.string() });

const urlVerificationSchema = z.object({
  type: z.literal("url_verification"),
  challenge: z.string().min(1),
});

const eventCallbackSchema = z.object({
  type: z.literal("event_callback"),
  team_id: z.string().min(1),
  event_id: z.string().min(1),
  is_ext_shared_channel: z.boolean().optional(),
  authorizations: z.array(z.object({ user_id: z.string().optional(), is_bot: z.boolean().optional() })).optional(),
  event: typeOnly.loose(),
});

const messageEventSchema = z.object({
  type: z.enum(["app_mention", "message"]),
  channel: z.string().min(1),
  ts: z.string().min(1),
  thread_ts: z.string().min(1).optional(),
  user: z.string().min(1).optional(),
  user_team: z.string().optional(),
  source_team: z.string().optional(),
  bot_id: z.string().optional(),
  subtype: z.string().optional(),
  text: z.string().optional(),
  channel_type: z.string().optional(),
});

export interface ParseSlackEventOptions {
  /**
   * The bot's own user id. Default: the bot users named in the envelope's `authorizations`.
   * Its messages are ignored and its mention is removed from the text.
   */
  botUserId?: string;
}

function invalid(error: z.ZodError, what: string): ValidationError {
  return new ValidationError(`invalid slack ${what}`, issueDetails(error));
}

/**
 * A user mention, `<@U123>` or `<@U123|name>`. The label stops at the next `<` as well as `>`, so
 * each character is scanned once: with `[^>]*` every unclosed `<@U1|` scanned to the end of the text.
 */
const MENTION = /<@([A-Z0-9]+)(?:\|[^<>]*)?>/g;
const BLANKS = /^[ \t]*$/;

function isBlank(code: number): boolean {
  return code === 0x20 || code === 0x09;
}

/**
 * Removes mentions of the bot, each with the blanks around it, leaving one space. With no known
 * bot id, an `app_mention`'s leading mention is taken to be the bot's, since Slack sends that
 * event only when the bot is mentioned. Linear in the text: blanks are skipped by hand rather
 * than matched around the mention, which a backtracking regex retried at every blank.
 */
export function stripSlackMention(text: string, botUserIds: ReadonlySet<string>, leadingIsBot: boolean): string {
  let out = "";
  let last = 0;
  let first = true;
  for (const match of text.matchAll(MENTION)) {
    const leading = first && BLANKS.test(text.slice(0, match.index));
    first = false;
    if (!botUserIds.has(match[1]) && !(leading && leadingIsBot && botUserIds.size === 0)) continue;
    let before = match.index;
    while (before > last && isBlank(text.charCodeAt(before - 1))) before -= 1;
    out += `${text.slice(last, before)} `;
    last = match.index + match[0].length;
    while (last < text.length && isBlank(text.charCodeAt(last))) last += 1;
  }
  return (out + text.slice(last)).trim();
}

/**
 * Parses an Events API body into what it asks of us. Pure: no I/O, no clock. Throws
 * `ValidationError` when the body is not an envelope Slack sends.
 */
export function parseSlackEvent(rawBody: string, options: ParseSlackEventOptions = {}): SlackDelivery {
  let json: unknown;
  try {
    json = JSON.parse(rawBody);
  } catch (error) {
    throw new ValidationError("slack body is not JSON", undefined, { cause: error });
  }
  const head = typeOnly.safeParse(json);
  if (!head.success) throw invalid(head.error, "envelope");

  if (head.data.type === "url_verification") {
    const parsed = urlVerificationSchema.safeParse(json);
    if (!parsed.success) throw invalid(parsed.error, "url_verification");
    return { kind: "url_verification", challenge: parsed.data.challenge };
  }
  if (head.data.type !== "event_callback") return { kind: "ignore", reason: SLACK_IGNORE_REASONS.unsupportedEnvelope };

  const envelope = eventCallbackSchema.safeParse(json);
  if (!envelope.success) throw invalid(envelope.error, "event_callback");
  const { team_id: teamId, authorizations, event: rawEvent, is_ext_shared_channel: isExtSharedChannel } = envelope.data;
  if (rawEvent.type !== "app_mention" && rawEvent.type !== "message") {
    return { kind: "ignore", reason: SLACK_IGNORE_REASONS.unsupportedEvent };
  }
  const parsedEvent = messageEventSchema.safeParse(rawEvent);
  if (!parsedEvent.success) {
    // Some system subtypes are shaped differently; they are ignored anyway, so their shape does not matter.
    if (typeof rawEvent.subtype === "string") return { kind: "ignore", reason: SLACK_IGNORE_REASONS.notUserText };
    throw invalid(parsedEvent.error, "event");
  }
  const event = parsedEvent.data;

  const botUserIds = new Set(
    options.botUserId ? [options.botUserId] : (authorizations ?? []).filter((a) => a.is_bot && a.user_id).map((a) => a.user_id as string),
  );
  if (event.bot_id || event.subtype === "bot_message") return { kind: "ignore", reason: SLACK_IGNORE_REASONS.botMessage };
  if (event.user && botUserIds.has(event.user)) return { kind: "ignore", reason: SLACK_IGNORE_REASONS.ownMessage };
  if ((event.subtype !== undefined && !SLACK_USER_TEXT_SUBTYPES.includes(event.subtype)) || !event.user) {
    return { kind: "ignore", reason: SLACK_IGNORE_REASONS.notUserText };
  }
  // Channel messages reach the assistant as app_mention; a `message` there would answer twice.
  if (event.type === "message" && event.channel_type !== "im") {
    return { kind: "ignore", reason: SLACK_IGNORE_REASONS.notDirectMessage };
  }
  // Unescaped after the mention is removed: a `&lt;@U1&gt;` the person typed is text, not a mention.
  const text = unescapeSlackText(stripSlackMention(event.text ?? "", botUserIds, event.type === "app_mention"));
  if (text === "") return { kind: "ignore", reason: SLACK_IGNORE_REASONS.empty };
  const identity = slackIdentityOf({ teamId, userId: event.user, isExtSharedChannel, userTeam: event.user_team, sourceTeam: event.source_team });
  if (identity.kind === "refused") return { kind: "ignore", reason: identity.reason };

  return {
    kind: "message",
    message: {
      teamId,
      channelId: event.channel,
      userId: event.user,
      userTeamId: identity.team,
      text,
      ts: event.ts,
      threadTs: event.thread_ts ?? event.ts,
    },
  };
}

/**
 * The turn for a Slack message. A thread is one conversation, owned by the workspace; who may
 * read it follows the channel. The writer is a Slack principal of their own team (the workspace's,
 * or in a Slack Connect channel their organisation's); their roles come from `SLACK_ROLES` for
 * that team when the turn runs, so a guest gets none of the host's defaults.
 */
export function slackTurnJob(message: SlackUserMessage, receivedAt: Date): SlackTurnJob {
  return {
    channel: "slack",
    conversationKey: `slack:${message.teamId}:${message.channelId}:${message.threadTs}`,
    principal: slackPrincipal(message.userTeamId, message.userId),
    owner: tenantOwner("slack", message.teamId),
    readScope: `slack:${message.teamId}:${message.channelId}`,
    content: message.text,
    // The message, not the delivery: Slack sends a mention again, under a new event id, when its message is edited.
    dedupeId: `slack:${message.teamId}:${message.channelId}:${message.ts}`,
    receivedAt: receivedAt.toISOString(),
    replyTo: { teamId: message.teamId, channelId: message.channelId, threadTs: message.threadTs },
  };
}
