import type { TurnEvent } from "./turn-event.js";

/** Turns whose events one process keeps in memory; the oldest is dropped first. */
export const DEFAULT_LIVE_TURNS_KEPT = 256;

export interface TurnEventHubOptions {
  /** Default: {@link DEFAULT_LIVE_TURNS_KEPT}. */
  turnsKept?: number;
}

/** A wait for a turn's next event; `cancel` forgets it. */
export interface EventWait {
  promise: Promise<void>;
  cancel(): void;
}

/**
 * The events of the turns running (or recently run) in this process, text deltas included, as
 * they happen: what a client of this process follows live. Memory only; what another process
 * needs is in the `TurnEventStore`.
 */
export class TurnEventHub {
  readonly #turns = new Map<string, TurnEvent[]>();
  readonly #waiters = new Map<string, Set<() => void>>();
  readonly #turnsKept: number;

  constructor(options: TurnEventHubOptions = {}) {
    this.#turnsKept = options.turnsKept ?? DEFAULT_LIVE_TURNS_KEPT;
  }

  publish(turnId: string, event: TurnEvent): void {
    let events = this.#turns.get(turnId);
    if (!events) {
      if (this.#turns.size >= this.#turnsKept) this.#turns.delete(this.#turns.keys().next().value as string);
      this.#turns.set(turnId, (events = []));
    }
    events.push(event);
    const waiters = this.#waiters.get(turnId);
    this.#waiters.delete(turnId);
    for (const wake of waiters ?? []) wake();
  }

  /** The id of the last event this process has of the turn; 0 when none. */
  lastId(turnId: string): number {
    return this.#turns.get(turnId)?.at(-1)?.id ?? 0;
  }

  /** The turn's events after `afterId` that this process has. */
  after(turnId: string, afterId: number): TurnEvent[] {
    const events = this.#turns.get(turnId) ?? [];
    // Ids grow by one within an attempt; a search from the end finds the start in a step or two.
    let start = events.length;
    while (start > 0 && events[start - 1].id > afterId) start--;
    return events.slice(start);
  }

  /** Resolves at the turn's next event here. */
  next(turnId: string): EventWait {
    let wake = (): void => undefined;
    const promise = new Promise<void>((resolve) => (wake = resolve));
    const waiters = this.#waiters.get(turnId) ?? new Set();
    waiters.add(wake);
    this.#waiters.set(turnId, waiters);
    return {
      promise,
      cancel: () => {
        waiters.delete(wake);
        if (waiters.size === 0 && this.#waiters.get(turnId) === waiters) this.#waiters.delete(turnId);
      },
    };
  }
}
