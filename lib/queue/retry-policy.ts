/**
 * When a queued turn is tried again: pure functions of the attempt, the time left and a random
 * number in [0, 1), so the policy is tested without clocks or queues.
 *
 * Two levels. A turn whose model is busy (`ModelBusyError`: Bedrock throttling, unavailable, not
 * ready) is tried again inside the same receive, while the message is invisible on the queue,
 * after an exponential backoff with full jitter (AWS Architecture Blog, "Exponential Backoff And
 * Jitter"): many workers throttled at once spread their retries instead of returning together.
 * When the busy window or the worker's time runs out, and for any other transient failure, the
 * message comes back from the queue after a backoff (with jitter) that is never shorter than the
 * error's Retry-After.
 */

/** First in-receive wait after a busy model: the ceiling of its full-jitter draw. */
export const DEFAULT_BUSY_RETRY_BASE_MS = 1_000;
/** Largest in-receive wait after a busy model. */
export const DEFAULT_BUSY_RETRY_MAX_MS = 20_000;
/** How long one receive keeps trying a busy model before handing the turn back to the queue. */
export const DEFAULT_BUSY_RETRY_WINDOW_MS = 120_000;
/**
 * Time a worker keeps for the attempt after the wait: no wait starts unless this much of the
 * worker's time (and so of the message's visibility) is left after it.
 */
export const DEFAULT_BUSY_RETRY_RESERVE_MS = 60_000;
/** First queue retry delay of a failed turn; doubled on each further receive. */
export const DEFAULT_RETRY_BASE_SECONDS = 10;
/** Longest wait before a queue retry. */
export const DEFAULT_RETRY_MAX_SECONDS = 300;

export interface BusyRetryPolicy {
  /** Default: {@link DEFAULT_BUSY_RETRY_BASE_MS}. */
  baseMs?: number;
  /** Default: {@link DEFAULT_BUSY_RETRY_MAX_MS}. */
  maxMs?: number;
  /** Default: {@link DEFAULT_BUSY_RETRY_WINDOW_MS}. */
  windowMs?: number;
  /** Default: {@link DEFAULT_BUSY_RETRY_RESERVE_MS}. */
  reserveMs?: number;
}

export interface BusyRetryState {
  /** Busy failures in this receive so far (1 after the first). */
  failures: number;
  /** Time since the receive began. */
  elapsedMs: number;
  /** The worker's time left (Lambda's `getRemainingTimeInMillis`); unbounded when undefined (the local server). */
  remainingMs?: number;
}

/**
 * The wait before trying a busy model again in this receive, drawn uniformly from
 * [0, min(max, base × 2^(failures − 1))]; undefined when the wait would end past the window or
 * leave less than the reserve of the worker's time: the turn then goes back to the queue.
 */
export function busyRetryDelayMs(state: BusyRetryState, random: number, policy: BusyRetryPolicy = {}): number | undefined {
  const base = policy.baseMs ?? DEFAULT_BUSY_RETRY_BASE_MS;
  const cap = Math.min(policy.maxMs ?? DEFAULT_BUSY_RETRY_MAX_MS, base * 2 ** Math.max(0, state.failures - 1));
  const delay = Math.floor(random * cap);
  if (state.elapsedMs + delay > (policy.windowMs ?? DEFAULT_BUSY_RETRY_WINDOW_MS)) return undefined;
  if (state.remainingMs !== undefined && state.remainingMs - delay < (policy.reserveMs ?? DEFAULT_BUSY_RETRY_RESERVE_MS)) return undefined;
  return delay;
}

/**
 * The wait before asking again for a concurrency slot that a turn which must run (resumed after
 * its approvals, or handed on by the API) was refused: the refusal's Retry-After, as long as the
 * same window and reserve as a busy model's allow; undefined when it does not fit, and the turn
 * goes back to the queue.
 */
export function slotRetryDelayMs(state: Omit<BusyRetryState, "failures">, retryAfterSeconds: number, policy: BusyRetryPolicy = {}): number | undefined {
  const delay = Math.max(0, retryAfterSeconds) * 1000;
  if (state.elapsedMs + delay > (policy.windowMs ?? DEFAULT_BUSY_RETRY_WINDOW_MS)) return undefined;
  if (state.remainingMs !== undefined && state.remainingMs - delay < (policy.reserveMs ?? DEFAULT_BUSY_RETRY_RESERVE_MS)) return undefined;
  return delay;
}

/**
 * The queue's delay before the next receive: exponential in the receive count, with up to a
 * fifth of it added at random (equal-ish jitter, so retries of a throttled hour do not land
 * together), capped, and never sooner than the error's own Retry-After.
 */
export function queueRetryDelaySeconds(receiveCount: number, random: number, retryAfterSeconds?: number): number {
  const backoff = Math.min(DEFAULT_RETRY_BASE_SECONDS * 2 ** Math.max(0, receiveCount - 1), DEFAULT_RETRY_MAX_SECONDS);
  const jittered = Math.min(Math.round(backoff * (1 + random / 5)), DEFAULT_RETRY_MAX_SECONDS);
  return retryAfterSeconds === undefined ? jittered : Math.max(jittered, retryAfterSeconds);
}
