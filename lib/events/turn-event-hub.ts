import { DEFAULT_LIVE_EVENTS_MAX_BYTES } from "../config/deployment-config.js";
import type { TurnEvent } from "./turn-event-types.js";

export { DEFAULT_LIVE_EVENTS_MAX_BYTES };

/** Turns whose events one process keeps in memory; the oldest is dropped first. */
export const DEFAULT_LIVE_TURNS_KEPT = 256;

/** Estimated heap bytes of one event kept: its text (two bytes a UTF-16 code unit) and an object's overhead. */
export function eventBytes(event: TurnEvent): number {
  const text = event.type === "text" ? event.delta.length : JSON.stringify(event).length;
  return 2 * text + 96;
}

export interface TurnEventHubOptions {
  /** Default: {@link DEFAULT_LIVE_TURNS_KEPT}. */
  turnsKept?: number;
  /** Default: {@link DEFAULT_LIVE_EVENTS_MAX_BYTES}. */
  maxBytes?: number;
}

/** A wait for a turn's next event; `cancel` forgets it. */
export interface EventWait {
  promise: Promise<void>;
  cancel(): void;
}

interface LiveTurn {
  events: TurnEvent[];
  bytes: number;
}

/**
 * The events of the turns running (or recently run) in this process, text deltas included, as
 * they happen: what a client of this process follows live. Memory only, bounded by bytes and by
 * turns: the oldest turns are dropped first, and a turn dropped while it runs (or one larger than
 * the whole budget) is no longer kept here at all, so its followers read the `TurnEventStore`, as
 * for a turn that runs in another process.
 */
export class TurnEventHub {
  readonly #turns = new Map<string, LiveTurn>();
  /** Turns dropped from memory: their later events are not kept either (a partial turn would leave a gap). */
  readonly #dropped = new Set<string>();
  readonly #waiters = new Map<string, Set<() => void>>();
  readonly #turnsKept: number;
  readonly #maxBytes: number;
  #bytes = 0;

  constructor(options: TurnEventHubOptions = {}) {
    this.#turnsKept = options.turnsKept ?? DEFAULT_LIVE_TURNS_KEPT;
    this.#maxBytes = options.maxBytes ?? DEFAULT_LIVE_EVENTS_MAX_BYTES;
  }

  /** Estimated bytes of the events kept, all turns together: at most `maxBytes`. */
  get retainedBytes(): number {
    return this.#bytes;
  }

  publish(turnId: string, event: TurnEvent): void {
    // A dropped turn's followers are not woken: they wait a poll period and read the store, as for another process's turn.
    if (this.#dropped.has(turnId)) return;
    this.#keep(turnId, event);
    const waiters = this.#waiters.get(turnId);
    // Stryker disable next-line all: frees the woken waits only; waking one again does nothing
    this.#waiters.delete(turnId);
    for (const wake of waiters ?? []) wake();
  }

  #keep(turnId: string, event: TurnEvent): void {
    let turn = this.#turns.get(turnId);
    if (!turn) {
      if (this.#turns.size >= this.#turnsKept) this.#drop(this.#turns.keys().next().value as string);
      turn = { events: [], bytes: 0 };
      this.#turns.set(turnId, turn);
    }
    const size = eventBytes(event);
    turn.events.push(event);
    turn.bytes += size;
    this.#bytes += size;
    // Oldest first; the turn published to goes last, when it alone is over the budget.
    while (this.#bytes > this.#maxBytes) {
      const oldest = this.#turns.keys().next().value as string;
      this.#drop(oldest === turnId && this.#turns.size > 1 ? ([...this.#turns.keys()][1] as string) : oldest);
    }
  }

  #drop(turnId: string): void {
    const turn = this.#turns.get(turnId);
    if (!turn) return;
    this.#turns.delete(turnId);
    this.#bytes -= turn.bytes;
    this.#dropped.add(turnId);
    // Remembered as long as as many turns as are kept: enough for a turn dropped while it runs.
    if (this.#dropped.size > this.#turnsKept) this.#dropped.delete(this.#dropped.values().next().value as string);
  }

  /** The id of the last event this process has of the turn; 0 when none. */
  lastId(turnId: string): number {
    const events = this.#turns.get(turnId)?.events;
    return events ? events[events.length - 1].id : 0;
  }

  /** The turn's events after `afterId` that this process has. */
  after(turnId: string, afterId: number): TurnEvent[] {
    const events = this.#turns.get(turnId)?.events;
    if (!events) return [];
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
        // Stryker disable next-line all: frees an empty set only; the next publish or wait finds the turn's waits the same
        if (waiters.size === 0 && this.#waiters.get(turnId) === waiters) this.#waiters.delete(turnId);
      },
    };
  }
}
