import type { TurnRequest, TurnResult, TurnRunner } from "../agent/turn-runner.js";
import { apiPrincipal, ownerKey } from "../auth/principal.js";
import type { TurnJob } from "./turn-job.js";
import { DEFAULT_SYNC_TURN_DEADLINE_MS } from "../config/deployment-config.js";
import { ValidationError } from "../errors.js";
import type { TurnStore } from "../store/turn-store.js";
import { turnMetricsOf, type TurnMetricsSink } from "./turn-metrics.js";
import type { TurnQueue } from "./turn-queue.js";

export interface TurnDispatcherOptions {
  runner: TurnRunner;
  turns: TurnStore;
  queue: TurnQueue;
  /**
   * How long a turn may run in the request before it is handed to the worker: no model call or tool
   * run starts after it; one under way finishes and is used. Default: {@link DEFAULT_SYNC_TURN_DEADLINE_MS}.
   */
  syncDeadlineMs?: number;
  /**
   * The longest the request may run the turn (an API that cuts longer responses, API Gateway's 30 s):
   * past it a call under way is aborted after all, and the worker makes it again. Default: none.
   */
  maxSyncMs?: number;
  onTurnCompleted?: TurnMetricsSink;
  /** Called with the error of a turn that failed while it ran in the request (not one handed to the worker). */
  onTurnFailed?: (error: unknown) => void;
}

export type DispatchOutcome = { kind: "completed"; result: TurnResult } | { kind: "queued"; turnId: string };

/**
 * Runs an API turn in the request while it can finish in time, and otherwise hands it to the
 * worker: the graph is stopped between steps at the deadline, the runner leaves the turn queued,
 * and the worker resumes it from its last checkpoint under the same turn id. A model call under
 * way at the deadline is finished and checkpointed first, never paid for twice: if it was the
 * answer, the turn completes in the request. Only `maxSyncMs` aborts a call in flight. `async`
 * skips the attempt and queues at once.
 */
export class TurnDispatcher {
  private readonly syncDeadlineMs: number;

  constructor(private readonly options: TurnDispatcherOptions) {
    this.syncDeadlineMs = options.syncDeadlineMs ?? DEFAULT_SYNC_TURN_DEADLINE_MS;
  }

  async dispatch(request: TurnRequest, mode: { async?: boolean } = {}): Promise<DispatchOutcome> {
    if (mode.async) {
      await this.options.runner.accept(request.conversationId, request.turnId);
      await this.options.queue.enqueue(apiTurnJob(request));
      return { kind: "queued", turnId: request.turnId };
    }
    const deadline = new AbortController();
    const cap = new AbortController();
    const timer = setTimeout(() => deadline.abort(), this.syncDeadlineMs);
    const capTimer = this.options.maxSyncMs === undefined ? undefined : setTimeout(() => cap.abort(), this.options.maxSyncMs);
    const started = Date.now();
    try {
      const signals = { deadline: deadline.signal, ...(capTimer && { signal: cap.signal }) };
      const result = await this.options.runner.run({ ...request, ...signals, origin: apiTurnJob(request) });
      const turn = await this.options.turns.get(result.turnId);
      if (this.options.onTurnCompleted && turn?.completedAt && turn.completedAt.getTime() >= started) {
        this.options.onTurnCompleted(turnMetricsOf(result, turn));
      }
      return { kind: "completed", result };
    } catch (error) {
      // The runner left the stopped turn queued; the worker resumes it.
      if (!deadline.signal.aborted) {
        this.options.onTurnFailed?.(error);
        throw error;
      }
      await this.options.queue.enqueue(apiTurnJob(request));
      return { kind: "queued", turnId: request.turnId };
    } finally {
      clearTimeout(timer);
      clearTimeout(capTimer);
    }
  }
}

/** An API turn as a queue job: the conversation id is its key, the turn id its dedupe id. */
export function apiTurnJob(request: TurnRequest): TurnJob {
  const { principal } = request.caller;
  if (principal.issuer !== "api") throw new ValidationError("only API turns are dispatched to the worker");
  return {
    channel: "api",
    conversationKey: request.conversationId,
    principal: apiPrincipal(principal.subject, principal.tenant),
    roles: request.caller.roles,
    owner: request.caller.principal,
    readScope: `user:${ownerKey(request.caller.principal)}`,
    content: request.content,
    dedupeId: request.turnId,
    receivedAt: new Date().toISOString(),
  };
}
