import { RateLimitedError } from "../errors.js";

/** Event streams one principal may hold open at once in one process. */
export const DEFAULT_STREAMS_PER_PRINCIPAL = 5;
/** When a refused client may try again: a stream ends at its turn's final event, usually within seconds. */
export const DEFAULT_STREAM_RETRY_AFTER_SECONDS = 5;

export interface StreamLimiterOptions {
  /** Default: {@link DEFAULT_STREAMS_PER_PRINCIPAL}. */
  perPrincipal?: number;
}

/**
 * Counts the event streams each principal holds open in this process and refuses one more than
 * the cap with 429 `rate_limited` (`Retry-After`): a client that opens hundreds of follows holds
 * memory and polls for each. In AWS every stream has a container of its own, bounded by the
 * streaming function's reserved concurrency (`streamConcurrency`), whose throttles page
 * (docs/operations.md, "Streams refused").
 */
export class StreamLimiter {
  private readonly perPrincipal: number;
  private readonly open = new Map<string, number>();

  constructor(options: StreamLimiterOptions = {}) {
    this.perPrincipal = options.perPrincipal ?? DEFAULT_STREAMS_PER_PRINCIPAL;
  }

  /** Takes a stream for `principal`, or throws `RateLimitedError` at the cap; the returned function gives it back (once). */
  acquire(principal: string): () => void {
    const held = this.open.get(principal) ?? 0;
    if (held >= this.perPrincipal) {
      throw new RateLimitedError(`at most ${this.perPrincipal} event streams may be open at once`, "streams_per_principal", DEFAULT_STREAM_RETRY_AFTER_SECONDS);
    }
    this.open.set(principal, held + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.open.get(principal) ?? 1) - 1;
      if (left > 0) this.open.set(principal, left);
      else this.open.delete(principal);
    };
  }

  /** Streams `principal` holds open now. */
  held(principal: string): number {
    return this.open.get(principal) ?? 0;
  }
}
