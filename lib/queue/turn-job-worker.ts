import type { TurnResult, TurnRunner } from "../agent/turn-runner.js";
import type { ChannelRoles } from "../auth/channel-roles.js";
import type { Caller } from "../auth/principal.js";
import { type TurnAnswerStream, type TurnJob, type TurnReplier, withTurnQuestion } from "./turn-job.js";
import { DEFAULT_MAX_MESSAGE_CHARS } from "../config/server-config.js";
import { DEFAULT_TURN_MAX_RECEIVES } from "../config/deployment-config.js";
import {
  AuthenticationError,
  BudgetExhaustedError,
  ChannelDeliveryError,
  ConflictError,
  ContextBudgetExceededError,
  InvalidModelViewError,
  ModelBusyError,
  ModelCallFailedError,
  ModelCallLimitError,
  ModelCredentialsError,
  NotFoundError,
  PayloadTooLargeError,
  RateLimitedError,
  TurnSupersededError,
  ValidationError,
} from "../errors.js";
import type { ConversationStore } from "../store/conversation-store.js";
import type { TurnStore } from "../store/turn-store.js";
import type { ApprovalStore } from "../store/approval-store.js";
import { busyRetryDelayMs, queueRetryDelaySeconds, slotRetryDelayMs, type BusyRetryPolicy } from "./retry-policy.js";
import { turnMetricsOf, type TurnMetricsSink } from "./turn-metrics.js";
import { turnIdForJob } from "./turn-queue.js";
import { questionTooLarge } from "../validation.js";
import type { Limits } from "../limits/limits.js";
import { TurnAdmission, type TurnHold, type TurnToAdmit } from "../limits/turn-admission.js";

/**
 * How long a claim to send a reply holds before another delivery may take it over: longer than
 * the slowest send (Slack: three 10 s attempts with backoff; Teams: token plus two 10 s posts).
 */
export const DEFAULT_REPLY_CLAIM_MS = 120_000;

export interface TurnJobWorkerOptions {
  runner: TurnRunner;
  conversations: ConversationStore;
  turns: TurnStore;
  replier: TurnReplier;
  /** The roles of Slack and Teams users (`SLACK_ROLES`, `TEAMS_ROLES`). Default: none, so role-gated tools stay closed to them. */
  roles?: ChannelRoles;
  /** Receives after which a failing turn is given up and the user told. Default: {@link DEFAULT_TURN_MAX_RECEIVES}. */
  maxReceives?: number;
  /** Longest channel message taken as a question, as the API's limit. Default: {@link DEFAULT_MAX_MESSAGE_CHARS}. */
  maxMessageChars?: number;
  /** Default: {@link DEFAULT_REPLY_CLAIM_MS}. */
  replyClaimMs?: number;
  onTurnCompleted?: TurnMetricsSink;
  /** Where a channel turn's waiting calls are claimed for their one notice in the thread. Default: no notice. */
  approvals?: ApprovalStore;
  /** Admits every turn it runs against its user's and tenant's limits, resumed ones included (docs/limits.md). Default: every turn admitted. */
  admission?: Pick<TurnAdmission, "run">;
  /** Whether a channel user is told of a refusal (once per limit and window). Default: told every time. */
  limits?: Pick<Limits, "claimNotice">;
  /** How a busy model is tried again inside one receive (docs/operations.md, "Model busy"). Default: the `retry-policy.ts` defaults. */
  busyRetry?: BusyRetryPolicy;
  /** Source of the retries' jitter, in [0, 1). Default: `Math.random`. */
  random?: () => number;
}

export type TurnJobOutcome =
  | { kind: "completed"; turnId: string; result: TurnResult }
  /** Paused before calls a person must decide; a job resumes it once they are (`Approvals`). */
  | { kind: "awaiting-approval"; turnId: string; result: TurnResult }
  /** Failed for good: the user got the failure message; the message must not come back. */
  | { kind: "gave-up"; turnId: string; error: unknown }
  /** Failed for now: the message should come back after `delaySeconds`. */
  | { kind: "retry"; turnId: string; error: unknown; delaySeconds: number }
  /** A redelivery of a job whose reply was already sent: nothing was run or sent again. */
  | { kind: "already-replied"; turnId: string }
  /** The edited arguments a webhook handed over were stored; other calls of the turn still wait, so nothing ran. */
  | { kind: "edits-recorded"; turnId: string };

/** HTTP statuses that mean "not now" although they are 4xx: timeout and throttling. */
const TRANSIENT_CLIENT_STATUSES = new Set([408, 429]);

/**
 * An AWS SDK error (Bedrock's `ValidationException`, `AccessDeniedException`, …) that the
 * service answered with a 4xx status and the SDK does not call retryable: the same request
 * will be refused again.
 */
function isPermanentSdkError(error: unknown): boolean {
  if (typeof error !== "object" || error === null) return false;
  const { $metadata, $retryable } = error as { $metadata?: { httpStatusCode?: unknown }; $retryable?: unknown };
  const status = $metadata?.httpStatusCode;
  return typeof status === "number" && status >= 400 && status < 500 && !TRANSIENT_CLIENT_STATUSES.has(status) && !$retryable;
}

/**
 * Slack refused the call (`channel_not_found`, `not_in_channel`, … carry status 200 from the
 * replier) or the Bot Connector answered 4xx: posting the same reply again fails again.
 */
function isPermanentDelivery(error: unknown): boolean {
  return (
    error instanceof ChannelDeliveryError &&
    error.status !== undefined &&
    error.status >= 200 &&
    error.status < 500 &&
    !TRANSIENT_CLIENT_STATUSES.has(error.status)
  );
}

/** Model failures that the same request meets again: refused as invalid, a model that does not exist, access denied. */
const TRANSIENT_MODEL_ERROR_CODES = new Set(["model_busy", "model_unreachable"]);

/** Errors that the same job would meet again: retrying only delays the user's answer. */
function isPermanent(error: unknown): boolean {
  return (
    (error instanceof ModelCallFailedError && !TRANSIENT_MODEL_ERROR_CODES.has(error.code)) ||
    [
      ValidationError,
      NotFoundError,
      AuthenticationError,
      PayloadTooLargeError,
      ContextBudgetExceededError,
      InvalidModelViewError,
      ModelCallLimitError,
      ModelCredentialsError,
      TurnSupersededError,
    ].some((type) => error instanceof type) ||
    isPermanentSdkError(error) ||
    isPermanentDelivery(error)
  );
}

/**
 * The worker's logic for one queued turn: bind the channel conversation, run (or resume) the
 * turn under an id derived from the event, reply in the channel. A redelivered message finds
 * its turn completed and does not run it again; once the reply is recorded as sent, it sends
 * nothing either, so each channel turn gets exactly one reply (or one failure message).
 */
export class TurnJobWorker {
  private readonly maxReceives: number;
  private readonly maxMessageChars: number;
  private readonly replyClaimMs: number;
  private readonly random: () => number;
  private readonly admission: Pick<TurnAdmission, "run">;

  constructor(private readonly options: TurnJobWorkerOptions) {
    this.admission = options.admission ?? new TurnAdmission();
    this.maxReceives = options.maxReceives ?? DEFAULT_TURN_MAX_RECEIVES;
    this.maxMessageChars = options.maxMessageChars ?? DEFAULT_MAX_MESSAGE_CHARS;
    this.replyClaimMs = options.replyClaimMs ?? DEFAULT_REPLY_CLAIM_MS;
    this.random = options.random ?? Math.random;
  }

  /**
   * `receiveCount`: how often the queue has delivered this message, this time included;
   * `remainingMs`: the worker's time left (Lambda's `getRemainingTimeInMillis`), which bounds the
   * retries of a busy model inside this receive.
   */
  async process(queued: TurnJob, receiveCount: number, remainingMs?: () => number): Promise<TurnJobOutcome> {
    const turnId = turnIdForJob(queued);
    const { turns, runner } = this.options;
    const started = Date.now();
    let stream: TurnAnswerStream | undefined;
    let job = queued;
    try {
      if (job.resume !== undefined) job = await this.resumed(job, turnId);
      // Handed over while other calls still wait: their decisions resume the turn.
      if (queued.edits && (await this.options.approvals?.listByTurn(turnId))?.some((a) => a.status === "pending" && a.deadline.getTime() > Date.now())) {
        return { kind: "edits-recorded", turnId };
      }
      if (job.channel !== "api" && (await turns.get(turnId))?.repliedAt) return { kind: "already-replied", turnId };
      const conversationId = await this.bind(job);
      // The turn exists before anything can fail, so its failure and its reply are recorded on it.
      await runner.accept(conversationId, turnId);
      // Measured trimmed, as every entry measures a question (`questionText`); channels hand it trimmed already.
      if (job.content.trim().length > this.maxMessageChars) {
        const error = questionTooLarge(this.maxMessageChars);
        await turns.reject(turnId, { code: "payload_too_large", message: "the message is too long" });
        throw error;
      }
      stream = this.options.replier.openStream?.(job, () => turns.claimStream(turnId, job.resume));
      // The person asks (tools check their permissions); the workspace or tenant owns the conversation.
      const caller = await this.callerOf(job);
      // Every turn is admitted here as the API admits its own (docs/limits.md): a channel's message, a turn resumed after its
      // approvals or by recovery (like a new one), and an API turn, which keeps the slot the API took for it. A slot found held
      // is adopted: an earlier attempt handed the turn on or died. (A delivery overlapping a live attempt, once its visibility
      // lapsed, is refused by the lease and gives that slot back early: the live turn then runs uncounted until it ends.)
      const resumes = job.resume !== undefined;
      const fresh = job.channel !== "api" && !resumes;
      const admit = { turnId, principal: caller.principal, resumes, adopts: true };
      const body = async (hold: TurnHold): Promise<TurnJobOutcome> => {
        const run = () =>
          runner.run({
            conversationId,
            caller,
            owner: job.owner,
            content: job.content,
            turnId,
            origin: job,
            queueDelivery: true,
            // What `process` retries: the turn is then left queued, not failed (docs/api.md, "Failure codes").
            retries: (error) => !isPermanent(error) && receiveCount < this.maxReceives,
            hold,
            onEvent: stream && ((e) => stream!.onEvent(e)),
          });
        const result = await this.whileBusy(job, turnId, run, remainingMs, async () => {
          // The retry answers by `reply`: the stream's one claim is spent.
          await stream?.abandon().catch(() => undefined);
          stream = undefined;
        });
        if (result.status === "awaiting_approval") {
          // The stream ends where the turn pauses; the resumed turn streams its continuation anew.
          await stream?.abandon().catch(() => undefined);
          await this.noticeOnce(job, conversationId, result);
          return { kind: "awaiting-approval", turnId, result };
        }
        const turn = await turns.get(turnId);
        if (this.options.onTurnCompleted && turn?.completedAt && turn.completedAt.getTime() >= started) {
          this.options.onTurnCompleted(turnMetricsOf(result, turn));
        }
        await this.replyOnce(job, turnId, () => (stream ? stream.finish(result.answer) : this.options.replier.reply(job, result.answer)));
        return { kind: "completed", turnId, result };
      };
      // A channel's new message over a limit ends failed, and its user is told once; a turn that must run waits for a slot.
      if (fresh) return await this.admission.run(admit, body, { refused: (error) => this.refuse(job, turnId, caller, error, stream) });
      return await this.whileNoSlot(admit, body, remainingMs);
    } catch (error) {
      if (!isPermanent(error) && receiveCount < this.maxReceives) {
        await stream?.abandon().catch(() => undefined);
        return { kind: "retry", turnId, error, delaySeconds: retryDelaySeconds(error, receiveCount, this.random()) };
      }
      const told = stream ? () => stream!.fail(error) : () => this.options.replier.replyFailure(job, error);
      // The user hears of it either way; a failure to tell them must not bring the turn back.
      await this.replyOnce(job, turnId, told).catch(() => undefined);
      return { kind: "gave-up", turnId, error };
    }
  }

  /**
   * A resume job as the turn runs it: the edited arguments a webhook handed over stored sealed
   * (when they are those its decision names), and the turn's own question, which the job does not carry.
   */
  private async resumed({ edits, ...job }: TurnJob, turnId: string): Promise<TurnJob> {
    for (const [approvalId, args] of Object.entries(edits ?? {})) await this.options.approvals?.recordEdit(approvalId, args);
    return withTurnQuestion(this.options.turns, turnId, job);
  }

  /**
   * A channel message over a limit: the turn ends failed, nothing ran, and the user is told once
   * per limit and window (the first refused message), not at every message.
   */
  private async refuse(
    job: TurnJob,
    turnId: string,
    caller: Caller,
    error: RateLimitedError | BudgetExhaustedError,
    stream: TurnAnswerStream | undefined,
  ): Promise<TurnJobOutcome> {
    const code = error instanceof BudgetExhaustedError ? "budget_exhausted" : "rate_limited";
    await this.options.turns.reject(turnId, { code, message: error.message });
    await stream?.abandon().catch(() => undefined);
    if (await this.options.limits?.claimNotice(caller.principal, error)) {
      await this.replyOnce(job, turnId, () => this.options.replier.replyFailure(job, error)).catch(() => undefined);
    }
    return { kind: "gave-up", turnId, error };
  }

  /**
   * Runs a turn that must run (resumed after its approvals or by recovery, or an API turn handed on) under its admission.
   * Refused a slot, it asks again after the refusal's Retry-After inside this receive, while the busy window and the
   * worker's time allow (`slotRetryDelayMs`); then the refusal sends it back to the queue, never sooner than its Retry-After.
   */
  private async whileNoSlot(turn: TurnToAdmit, body: (hold: TurnHold) => Promise<TurnJobOutcome>, remainingMs?: () => number): Promise<TurnJobOutcome> {
    const began = Date.now();
    for (;;) {
      let refusal: RateLimitedError | undefined;
      const outcome = await this.admission.run<TurnJobOutcome | undefined>(turn, body, {
        refused: async (error) => {
          if (error instanceof BudgetExhaustedError) throw error;
          refusal = error;
          return undefined;
        },
      });
      if (outcome || !refusal) return outcome as TurnJobOutcome;
      const delay = slotRetryDelayMs({ elapsedMs: Date.now() - began, remainingMs: remainingMs?.() }, refusal.retryAfterSeconds, this.options.busyRetry);
      if (delay === undefined) throw refusal;
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }

  /**
   * Runs the turn, and again after a jittered backoff while the model is busy, as long as the
   * busy window and the worker's time allow (`busyRetryDelayMs`); the thread hears once that the
   * answer comes in a moment. The last busy error goes to the queue's retry.
   */
  private async whileBusy(
    job: TurnJob,
    turnId: string,
    run: () => Promise<TurnResult>,
    remainingMs: (() => number) | undefined,
    beforeRetry: () => Promise<void>,
  ): Promise<TurnResult> {
    const began = Date.now();
    for (let failures = 1; ; failures++) {
      try {
        return await run();
      } catch (error) {
        if (!(error instanceof ModelBusyError)) throw error;
        await this.noticeBusyOnce(job, turnId);
        const delay = busyRetryDelayMs({ failures, elapsedMs: Date.now() - began, remainingMs: remainingMs?.() }, this.random(), this.options.busyRetry);
        if (delay === undefined) throw error;
        await beforeRetry();
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    }
  }

  /** "Busy, I will answer in a moment", once per channel turn across attempts and receives; a failure to say it changes nothing. */
  private async noticeBusyOnce(job: TurnJob, turnId: string): Promise<void> {
    const { replier, turns } = this.options;
    if (job.channel === "api" || !replier.noticeBusy) return;
    try {
      if (await turns.claimBusyNotice(turnId)) await replier.noticeBusy(job);
    } catch {
      // The answer still comes; the notice is a courtesy.
    }
  }

  /** Tells the channel thread which calls wait, once per set of approvals (a redelivery finds them claimed). */
  private async noticeOnce(job: TurnJob, conversationId: string, result: TurnResult): Promise<void> {
    const { approvals, replier } = this.options;
    if (job.channel === "api" || !approvals || !result.approvals?.length) return;
    if (!(await approvals.claimNotice(result.turnId))) return;
    await replier.requestApproval(job, conversationId, result.approvals);
  }

  /** An API job carries its token's roles; a channel user's are looked up now, so a changed mapping applies to queued turns too. */
  private async callerOf(job: TurnJob): Promise<Caller> {
    if (job.channel === "api") return { principal: job.principal, roles: job.roles };
    return { principal: job.principal, roles: (await this.options.roles?.rolesOf(job.principal)) ?? [] };
  }

  /**
   * API jobs name their conversation; a channel job's thread is bound to one on first use, owned by the workspace or
   * tenant, unless the job came before the thread's conversation was deleted (NotFound).
   */
  private async bind(job: TurnJob): Promise<string> {
    if (job.channel === "api") return job.conversationKey;
    const channel = { channel: job.channel, key: job.conversationKey };
    const conversation = await this.options.conversations.findOrCreateByChannelKey(job.owner, channel, new Date(job.receivedAt));
    return conversation._id;
  }

  /**
   * Sends at most one reply per turn across deliveries: claim, send, record. A send that fails
   * releases the claim so the retry can send; API turns are answered by the API instead.
   */
  private async replyOnce(job: TurnJob, turnId: string, send: () => Promise<void>): Promise<void> {
    if (job.channel === "api") return;
    const { turns } = this.options;
    if (!(await turns.claimReply(turnId, this.replyClaimMs))) return;
    try {
      await send();
    } catch (error) {
      await turns.releaseReply(turnId).catch(() => undefined);
      throw error;
    }
    await turns.markReplied(turnId);
  }
}

/**
 * Exponential backoff with jitter, never sooner than a conflict's Retry-After (the lease's remaining time, capped), a busy
 * model's, or a limit's (a resumed turn refused a slot).
 */
function retryDelaySeconds(error: unknown, receiveCount: number, random: number): number {
  const retryAfter =
    error instanceof ConflictError || error instanceof ModelBusyError || error instanceof RateLimitedError ? error.retryAfterSeconds : undefined;
  return queueRetryDelaySeconds(receiveCount, random, retryAfter);
}
