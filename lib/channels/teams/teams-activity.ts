import { z } from "zod";
import { tenantOwner, type Principal } from "../../auth/principal.js";
import type { TeamsTurnJob } from "../../queue/turn-job.js";
import { parseOrThrow } from "../../validation.js";
import { teamsIdentityOf, type TeamsIdentityRefusal } from "./teams-identity.js";

export const TEAMS_IGNORE_REASONS = {
  notMessage: "not_message",
  ownMessage: "own_message",
  empty: "empty",
} as const;
export type TeamsIgnoreReason = (typeof TEAMS_IGNORE_REASONS)[keyof typeof TEAMS_IGNORE_REASONS];

const channelAccountSchema = z.object({
  id: z.string().min(1),
  name: z.string().optional(),
  aadObjectId: z.string().optional(),
});

const activitySchema = z.object({
  type: z.string().min(1),
  id: z.string().min(1).optional(),
  channelId: z.string().min(1),
  serviceUrl: z.url(),
  from: channelAccountSchema,
  recipient: channelAccountSchema,
  conversation: z.object({
    id: z.string().min(1),
    tenantId: z.string().optional(),
    conversationType: z.string().optional(),
  }),
  text: z.string().optional(),
  entities: z.array(z.object({ type: z.string(), mentioned: channelAccountSchema.optional(), text: z.string().optional() })).optional(),
  channelData: z.object({ tenant: z.object({ id: z.string().min(1) }).optional() }).optional(),
});

export type TeamsActivity = z.infer<typeof activitySchema>;

/** A person's message to the assistant, as the turn needs it. */
export interface TeamsUserMessage {
  activityId: string;
  serviceUrl: string;
  conversationId: string;
  /** Entra tenant, from `channelData.tenant.id` (`teamsIdentityOf`). */
  tenantId: string;
  /** The sender: their Entra object id in that tenant (`teamsIdentityOf`). */
  principal: Principal & { issuer: "teams"; tenant: string };
  /** Channel account ids, needed to address the reply. */
  fromId: string;
  botId: string;
  botName?: string;
  /** Text with mentions of the bot removed; never blank. */
  text: string;
  /** `personal` (a 1:1 chat), `groupChat` or `channel`: only a 1:1 chat takes a streamed answer. */
  conversationType?: string;
}

export type TeamsDelivery =
  | { kind: "ignore"; reason: TeamsIgnoreReason }
  /** A message from nobody Teams vouches for (`teamsIdentityOf`): refused, never mapped to an id the sender could choose. */
  | { kind: "refused"; reason: TeamsIdentityRefusal }
  | { kind: "message"; message: TeamsUserMessage };

const AT_ELEMENT = /<at>([^<]*)<\/at>/g;

/**
 * Removes the bot's `<at>…</at>` mentions: those the activity's mention entities attribute to
 * the bot, and any carrying the bot's display name (Teams writes the name it shows).
 */
export function stripTeamsMention(activity: Pick<TeamsActivity, "text" | "entities" | "recipient">): string {
  const mentionTexts = new Set(
    (activity.entities ?? []).filter((e) => e.type === "mention" && e.mentioned?.id === activity.recipient.id && e.text).map((e) => e.text as string),
  );
  const text = (activity.text ?? "").replace(AT_ELEMENT, (whole, name: string) =>
    mentionTexts.has(whole) || (activity.recipient.name !== undefined && name.trim() === activity.recipient.name) ? " " : whole,
  );
  return text
    .replace(/&nbsp;/g, " ")
    .replace(/[ \t]{2,}/g, " ")
    .trim();
}

/**
 * Parses an activity (already authenticated) into what it asks of us. Pure. Throws
 * `ValidationError` when the body is not an activity.
 */
export function parseTeamsActivity(body: unknown): TeamsDelivery {
  const activity = parseOrThrow(activitySchema, body, "invalid bot framework activity");
  if (activity.type !== "message" || !activity.id) return { kind: "ignore", reason: TEAMS_IGNORE_REASONS.notMessage };
  if (activity.from.id === activity.recipient.id) return { kind: "ignore", reason: TEAMS_IGNORE_REASONS.ownMessage };
  const identity = teamsIdentityOf(body);
  if (identity.kind === "refused") return identity;
  const text = stripTeamsMention(activity);
  if (text === "") return { kind: "ignore", reason: TEAMS_IGNORE_REASONS.empty };
  return {
    kind: "message",
    message: {
      activityId: activity.id,
      serviceUrl: activity.serviceUrl,
      conversationId: activity.conversation.id,
      tenantId: identity.principal.tenant,
      principal: identity.principal,
      fromId: activity.from.id,
      botId: activity.recipient.id,
      botName: activity.recipient.name,
      text,
      conversationType: activity.conversation.conversationType,
    },
  };
}

/**
 * The turn for a Teams message. A Teams conversation id is one conversation, owned by the
 * tenant; who may read it follows the chat or channel (a channel thread's id is the channel's
 * id plus `;messageid=…`). The writer is a Teams principal of the tenant; their roles come from
 * `TEAMS_ROLES` when the turn runs.
 */
export function teamsTurnJob(message: TeamsUserMessage, receivedAt: Date): TeamsTurnJob {
  return {
    channel: "teams",
    conversationKey: `teams:${message.conversationId}`,
    principal: message.principal,
    owner: tenantOwner("teams", message.tenantId),
    readScope: `teams:${message.conversationId.split(";messageid=")[0]}`,
    content: message.text,
    dedupeId: `teams:${message.conversationId}:${message.activityId}`,
    receivedAt: receivedAt.toISOString(),
    replyTo: {
      serviceUrl: message.serviceUrl,
      conversationId: message.conversationId,
      activityId: message.activityId,
      botId: message.botId,
      botName: message.botName,
      userId: message.fromId,
      tenantId: message.tenantId,
      ...(message.conversationType ? { conversationType: message.conversationType } : {}),
    },
  };
}
