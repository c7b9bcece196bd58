import { isMongoUnavailable } from "./mongo-unavailable.js";

/** First wait before a write that met an unreachable database is tried again. */
export const DEFAULT_UNAVAILABLE_RETRY_BASE_MS = 100;
/** Longest wait between two tries. */
export const DEFAULT_UNAVAILABLE_RETRY_MAX_MS = 2_000;

export interface RetryWhileUnavailableOptions {
  /** When to stop trying (epoch milliseconds): past it, what the write would undo has lapsed by itself. Required. */
  untilMs: number;
  /** Default: {@link DEFAULT_UNAVAILABLE_RETRY_BASE_MS}. */
  baseMs?: number;
  /** Default: {@link DEFAULT_UNAVAILABLE_RETRY_MAX_MS}. */
  maxMs?: number;
}

/** How a retried write ended: done, given up at `untilMs` while the database stayed away, or failed on another error. */
export type RetryOutcome = { kind: "done" } | { kind: "expired"; error: unknown } | { kind: "failed"; error: unknown };

/**
 * Tries `write` until it succeeds, as long as it fails only because the database is unreachable
 * (`isMongoUnavailable`), waiting twice as long each time up to `maxMs`, and no later than
 * `untilMs`. Never rejects: the caller runs it in the background (an attempt that ended while the
 * database was away gives back its conversation as soon as it answers again) and may await the outcome.
 * Its timers do not keep a process alive.
 */
export async function retryWhileUnavailable(write: () => Promise<void>, options: RetryWhileUnavailableOptions): Promise<RetryOutcome> {
  const maxMs = options.maxMs ?? DEFAULT_UNAVAILABLE_RETRY_MAX_MS;
  for (let waitMs = options.baseMs ?? DEFAULT_UNAVAILABLE_RETRY_BASE_MS; ; waitMs = Math.min(maxMs, waitMs * 2)) {
    try {
      await write();
      return { kind: "done" };
    } catch (error) {
      if (!isMongoUnavailable(error)) return { kind: "failed", error };
      const left = options.untilMs - Date.now();
      if (left <= 0) return { kind: "expired", error };
      await new Promise((resolve) => setTimeout(resolve, Math.min(waitMs, left)).unref());
    }
  }
}
