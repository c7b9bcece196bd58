import type { Clock } from "../../lib/clock.js";

interface Timer {
  intervalMs: number;
  due: number;
  tick: () => Promise<void>;
}

/**
 * A clock the test moves. `advance` runs every timer that falls due on the way, in time order,
 * and waits for each tick to finish; `pause` moves time without running any, as a frozen
 * process would see it (its overdue timers then fire once on the next `advance`).
 */
export class ManualClock implements Clock {
  private ms: number;
  private readonly timers = new Set<Timer>();

  constructor(start = Date.parse("2030-01-01T00:00:00Z")) {
    this.ms = start;
  }

  now(): Date {
    return new Date(this.ms);
  }

  every(intervalMs: number, tick: () => Promise<void>): () => void {
    const timer: Timer = { intervalMs, due: this.ms + intervalMs, tick };
    this.timers.add(timer);
    return () => this.timers.delete(timer);
  }

  /** Moves time forward by `ms`, running the timers that fall due, each at its due time. */
  async advance(ms: number): Promise<void> {
    const end = this.ms + ms;
    for (;;) {
      const next = [...this.timers].sort((a, b) => a.due - b.due)[0];
      if (!next || next.due > end) break;
      this.ms = Math.max(this.ms, next.due);
      next.due = this.ms + next.intervalMs;
      await next.tick();
    }
    this.ms = end;
  }

  /** Moves time forward by `ms` without running any timer. */
  pause(ms: number): void {
    this.ms += ms;
  }

  /** Timers currently scheduled (heartbeats of running turns). */
  get scheduled(): number {
    return this.timers.size;
  }
}
