/**
 * Time as the lease sees it: the current instant and a repeating timer. Production uses
 * {@link systemClock}; tests pass a clock they advance themselves, so a five-minute model call
 * or an expired lease needs no waiting.
 */
export interface Clock {
  now(): Date;
  /** Calls `tick` every `intervalMs` until the returned function is called; a failed tick is the caller's to handle. */
  every(intervalMs: number, tick: () => Promise<void>): () => void;
}

export const systemClock: Clock = {
  now: () => new Date(),
  every(intervalMs, tick) {
    const timer = setInterval(() => void tick().catch(() => undefined), intervalMs);
    // A heartbeat never keeps a finishing process alive.
    timer.unref();
    return () => clearInterval(timer);
  },
};
