import type { TurnEvent } from "../events/turn-event-types.js";
import { z } from "zod";
import { ownerSchema, principalSchema } from "../auth/principal.js";
import { ValidationError } from "../errors.js";
import { parseOrThrow } from "../validation.js";
import type { ApprovalContext } from "../store/approval-store.js";
import type { TurnStore } from "../store/turn-store.js";

/** Where a turn came from; the worker picks the replier by it. */
export const TURN_CHANNELS = { slack: "slack", teams: "teams", api: "api" } as const;
export type TurnChannel = (typeof TURN_CHANNELS)[keyof typeof TURN_CHANNELS];

const slackReplyTargetSchema = z.object({
  teamId: z.string().min(1),
  channelId: z.string().min(1),
  /** The thread root: replies go into this thread. */
  threadTs: z.string().min(1),
});

const teamsReplyTargetSchema = z.object({
  /** Bot Connector base URL of the verified activity; the reply is sent there and nowhere else. */
  serviceUrl: z.url(),
  conversationId: z.string().min(1),
  /** The activity answered; the reply is threaded under it. */
  activityId: z.string().min(1),
  /** The bot's channel account (the activity's recipient), sent as the reply's `from`. */
  botId: z.string().min(1),
  botName: z.string().optional(),
  /** The user's channel account, sent as the reply's `recipient`. */
  userId: z.string().min(1),
  /** Entra tenant of the conversation, when Teams gave one. */
  tenantId: z.string().min(1).optional(),
  /** `personal`, `groupChat` or `channel`, when Teams gave it: only `personal` streams. */
  conversationType: z.string().min(1).max(50).optional(),
});

const jobFields = {
  /**
   * The channel's own key for the conversation: a Slack thread or a Teams conversation.
   * The worker binds it to a conversation (`findOrCreateByChannelKey`).
   */
  conversationKey: z.string().min(1),
  /** Who owns the conversation: the Slack workspace or the Teams tenant, not the first writer; the API caller. */
  owner: ownerSchema,
  /**
   * Who may read the conversation: everyone who can read this channel scope
   * (a Slack channel or DM, a Teams channel or chat).
   */
  readScope: z.string().min(1),
  /** The user's text, bot mention removed. */
  content: z.string().min(1),
  /** Stable across the channel's retries of the same event (Slack `event_id`, Teams activity id). */
  dedupeId: z.string().min(1),
  /** When ingress accepted the event (ISO 8601). */
  receivedAt: z.iso.datetime(),
  /** Set on a job that resumes the turn once its approvals are decided: names that set of decisions (docs/approvals.md). */
  resume: z.string().min(1).max(64).optional(),
  /**
   * Edited arguments by approval id, taken by a webhook that cannot seal them (docs/security.md, "Approvals"):
   * the worker stores them sealed when they are those the decision names (`ApprovalStore.recordEdit`).
   */
  edits: z.record(z.string(), z.record(z.string(), z.unknown())).optional(),
  /**
   * The enqueuing span's context (W3C `traceparent` and `tracestate`, or what the registered
   * propagator writes), set by the queue, so the worker's spans are in the request's trace
   * (lib/observability/tracing.ts). Ids only.
   */
  trace: z
    .record(z.string().regex(/^[\w.-]{1,64}$/), z.string().max(1024))
    .refine((carrier) => Object.keys(carrier).length <= 8, "at most 8 trace fields")
    .optional(),
};

/** The person who wrote the message, from the verified request: a principal of the job's own channel only. */
const principalOf = <I extends TurnChannel>(issuer: I) => principalSchema.extend({ issuer: z.literal(issuer) });

/**
 * The message the ingress puts on the queue and the worker takes off it. A channel job carries
 * the writer's principal, and the worker gives it its roles (`ChannelRoles`) when the turn runs;
 * an API job carries the roles of its token, which nothing else could tell.
 */
export const turnJobSchema = z.discriminatedUnion("channel", [
  z.object({ channel: z.literal(TURN_CHANNELS.slack), ...jobFields, principal: principalOf("slack"), replyTo: slackReplyTargetSchema }),
  z.object({ channel: z.literal(TURN_CHANNELS.teams), ...jobFields, principal: principalOf("teams"), replyTo: teamsReplyTargetSchema }),
  z.object({ channel: z.literal(TURN_CHANNELS.api), ...jobFields, principal: principalOf("api"), roles: z.array(z.string()) }),
]);

export type TurnJob = z.infer<typeof turnJobSchema>;
export type SlackTurnJob = Extract<TurnJob, { channel: "slack" }>;
export type TeamsTurnJob = Extract<TurnJob, { channel: "teams" }>;
export type SlackReplyTarget = SlackTurnJob["replyTo"];
export type TeamsReplyTarget = TeamsTurnJob["replyTo"];

/** Function the ingress calls to hand a turn to the queue (or, locally, straight to the worker). */
export type EnqueueTurn = (job: TurnJob) => Promise<void>;

/**
 * Sends a turn's answer, or its failure message, back to where the turn came from; the channels
 * implement it (`ChannelReplier`), the worker only calls it.
 */
export interface TurnReplier {
  reply(job: TurnJob, text: string): Promise<void>;
  replyFailure(job: TurnJob, error: unknown): Promise<void>;
  /** Asks in the channel for decisions on a turn's waiting calls (docs/approvals.md). */
  requestApproval(job: TurnJob, conversationId: string, approvals: readonly ApprovalRequestItem[]): Promise<void>;
  /** Tells the thread the model is busy and the answer comes in a moment (the worker says it once per turn). */
  noticeBusy?(job: TurnJob): Promise<void>;
  /**
   * A stream of the turn's answer where the channel can show one (Slack threads; Teams 1:1 chats),
   * else undefined: the answer goes by `reply`. `claimStream` is true for one attempt per turn
   * (and per resumption after approvals).
   */
  openStream?(job: TurnJob, claimStream: () => Promise<boolean>): TurnAnswerStream | undefined;
}

/** One waiting call, as a channel asks about it. */
export interface ApprovalRequestItem {
  approvalId: string;
  tool: string;
  args: Record<string, unknown>;
  expiresAt: string;
  /** The calls and outputs of the turn that led to it (`approvalContextOf`), shown to the approver. */
  context?: ApprovalContext;
}

/**
 * A turn's answer as it is written, in a channel that can show it so (Slack's streaming
 * messages, Teams' streaming in 1:1 chats). `onEvent` never blocks the turn: the calls it makes
 * are queued and coalesced. Exactly one of `finish`, `fail` or `abandon` ends it.
 */
export interface TurnAnswerStream {
  onEvent(event: TurnEvent): void;
  /** Delivers the final answer: closes the stream, or sends one message where it could not stream. */
  finish(answer: string): Promise<void>;
  /** Tells the user the turn failed, in the stream if one is open. */
  fail(error: unknown): Promise<void>;
  /** The attempt stops without an answer (the turn will be retried, or waits for approvals): closes an open stream. */
  abandon(): Promise<void>;
}

/** Parses a queue message body; a body that is not a turn job is a `ValidationError`, never a turn. */
export function parseTurnJob(body: string): TurnJob {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (error) {
    throw new ValidationError("turn job is not JSON", undefined, { cause: error });
  }
  return parseOrThrow(turnJobSchema, json, "invalid turn job");
}

/**
 * The job that resumes a turn recovery found without a live attempt: the job the turn recorded
 * as its origin, marked as this recovery (a fresh deduplication id, and a segment of its own for
 * a channel's stream). Throws ValidationError when the turn recorded none that parses.
 */
export function recoveryJobOf(turn: { _id: string; attempt?: number; origin?: Record<string, unknown> }): TurnJob {
  const parsed = turnJobSchema.safeParse(turn.origin);
  if (!parsed.success) throw new ValidationError(`turn ${turn._id} does not record how it resumes`);
  // A recovery is its own hop: the trace of the request that first queued the turn is long over.
  const { trace: _first, ...job } = parsed.data;
  return { ...job, resume: `recovery-${turn.attempt ?? 0}` };
}

/**
 * A resume job with its turn's question: an approval keeps none (`RESUMED_QUESTION`), and the turn's
 * own sealed `origin` has it. The job as it is when the turn recorded no question.
 */
export async function withTurnQuestion<J extends TurnJob>(turns: Pick<TurnStore, "get">, turnId: string, job: J): Promise<J> {
  const question = (await turns.get(turnId))?.origin?.content;
  return typeof question === "string" && question.length > 0 ? { ...job, content: question } : job;
}
