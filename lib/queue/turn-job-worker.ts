import type { TurnResult, TurnRunner } from "../agent/turn-runner.js";
import type { ChannelReplier } from "../channels/channel-replier.js";
import type { TurnJob } from "../channels/turn-job.js";
import { DEFAULT_TURN_MAX_RECEIVES } from "../config/config.js";
import {
  AuthenticationError,
  ConflictError,
  ContextBudgetExceededError,
  InvalidModelViewError,
  NotFoundError,
  PayloadTooLargeError,
  ValidationError,
} from "../errors.js";
import type { ConversationStore } from "../store/conversation-store.js";
import type { TurnStore } from "../store/turn-store.js";
import { turnMetricsOf, type TurnMetricsSink } from "./turn-metrics.js";
import { turnIdForJob } from "./turn-queue.js";

/** First retry delay of a failed turn; doubled on each further receive. */
export const DEFAULT_RETRY_BASE_SECONDS = 10;
/** Longest wait before a retry. */
export const DEFAULT_RETRY_MAX_SECONDS = 300;

export interface TurnJobWorkerOptions {
  runner: TurnRunner;
  conversations: ConversationStore;
  turns: TurnStore;
  replier: ChannelReplier;
  /** Receives after which a failing turn is given up and the user told. Default: {@link DEFAULT_TURN_MAX_RECEIVES}. */
  maxReceives?: number;
  onTurnCompleted?: TurnMetricsSink;
}

export type TurnJobOutcome =
  | { kind: "completed"; turnId: string; result: TurnResult }
  /** Failed for good: the user got the failure message; the message must not come back. */
  | { kind: "gave-up"; turnId: string; error: unknown }
  /** Failed for now: the message should come back after `delaySeconds`. */
  | { kind: "retry"; turnId: string; error: unknown; delaySeconds: number };

/** Errors that the same job would meet again: retrying only delays the user's answer. */
function isPermanent(error: unknown): boolean {
  return [ValidationError, NotFoundError, AuthenticationError, PayloadTooLargeError, ContextBudgetExceededError, InvalidModelViewError].some(
    (type) => error instanceof type,
  );
}

/**
 * The worker's logic for one queued turn: bind the channel conversation, run (or resume) the
 * turn under an id derived from the event, reply in the channel. A redelivered message finds
 * its turn completed and only replies, so a turn never runs twice.
 */
export class TurnJobWorker {
  private readonly maxReceives: number;

  constructor(private readonly options: TurnJobWorkerOptions) {
    this.maxReceives = options.maxReceives ?? DEFAULT_TURN_MAX_RECEIVES;
  }

  /** `receiveCount`: how often the queue has delivered this message, this time included. */
  async process(job: TurnJob, receiveCount: number): Promise<TurnJobOutcome> {
    const turnId = turnIdForJob(job);
    const started = Date.now();
    try {
      const { conversationId, caller } = await this.bind(job);
      const result = await this.options.runner.run({ conversationId, caller, content: job.content, turnId });
      const turn = await this.options.turns.get(turnId);
      if (this.options.onTurnCompleted && turn?.completedAt && turn.completedAt.getTime() >= started) {
        this.options.onTurnCompleted(turnMetricsOf(result, turn));
      }
      await this.options.replier.reply(job, result.answer);
      return { kind: "completed", turnId, result };
    } catch (error) {
      if (!isPermanent(error) && receiveCount < this.maxReceives) {
        return { kind: "retry", turnId, error, delaySeconds: retryDelaySeconds(error, receiveCount) };
      }
      // The user hears of it either way; a failure to tell them must not bring the turn back.
      await this.options.replier.replyFailure(job, error).catch(() => undefined);
      return { kind: "gave-up", turnId, error };
    }
  }

  /** API jobs name their conversation; a channel job's thread is bound to one on first use, owned by the workspace or tenant. */
  private async bind(job: TurnJob) {
    if (job.channel === "api") return { conversationId: job.conversationKey, caller: job.caller };
    const conversation = await this.options.conversations.findOrCreateByChannelKey(job.owner, { channel: job.channel, key: job.conversationKey });
    return { conversationId: conversation._id, caller: job.owner };
  }
}

/** Exponential backoff, and never sooner than a conflict's Retry-After (the lease's remaining time, capped). */
function retryDelaySeconds(error: unknown, receiveCount: number): number {
  const backoff = Math.min(DEFAULT_RETRY_BASE_SECONDS * 2 ** (receiveCount - 1), DEFAULT_RETRY_MAX_SECONDS);
  return error instanceof ConflictError && error.retryAfterSeconds !== undefined ? Math.max(backoff, error.retryAfterSeconds) : backoff;
}
