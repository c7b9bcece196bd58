import type { TurnEventStore } from "../store/turn-event-store.js";
import type { TurnDocument, TurnStore } from "../store/turn-store.js";
import { isFinalEvent, TURN_SUPERSEDED_EVENT, type TurnEvent, type TurnEventBody } from "./turn-event-types.js";
import type { TurnEventHub } from "./turn-event-hub.js";

/** A turn's stored events after `afterId`: the store gives back what the recorder gave it, `TurnEvent`s, a type of this layer it does not know. */
const storedEvents = (store: TurnEventStore, turnId: string, afterId: number) => store.after(turnId, afterId) as Promise<TurnEvent[]>;

/** How often a follower reads the store while the turn runs elsewhere (or is between steps here). */
export const DEFAULT_EVENT_POLL_MS = 500;
/** How long one follow lasts at most; the client reconnects with `Last-Event-ID` after it. */
export const DEFAULT_FOLLOW_MAX_MS = 840_000;
/**
 * How long a finished turn record waits for its final event before the follower infers one: the
 * runner stores the event after the rest of the turn's writes and the lease's release.
 */
export const DEFAULT_FINAL_EVENT_GRACE_MS = 5_000;

export interface TurnEventFollowerOptions {
  store: TurnEventStore;
  turns: Pick<TurnStore, "get">;
  /** This process's live events (`TurnEvents.hub`). */
  hub: TurnEventHub;
  /** Default: {@link DEFAULT_EVENT_POLL_MS}. */
  pollMs?: number;
  /** Default: {@link DEFAULT_FOLLOW_MAX_MS}. */
  followMaxMs?: number;
  /** Default: {@link DEFAULT_FINAL_EVENT_GRACE_MS}. */
  finalGraceMs?: number;
  /** Told of a store read that failed (the database away), before the follow throws it: the server's error log. Default: none. */
  onError?: (error: unknown) => void;
}

/** The final event a turn record implies, for a turn that finished without one stored (run before streaming, or its last batch lost). */
function finalEventOf(turn: TurnDocument): TurnEventBody | undefined {
  if (turn.status === "completed") return { type: "done", answer: turn.answer ?? "", usage: turn.usage };
  if (turn.status === "superseded") return TURN_SUPERSEDED_EVENT;
  if (turn.status === "failed") return { type: "failed", code: turn.error?.code ?? "internal_error", message: turn.error?.message ?? "the turn failed" };
  return undefined;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    // An abort before the sleep begins fires no event: without this, it would be heard only a poll period later.
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
  });
}

/**
 * Follows a turn's event stream from any event id, for clients: live from this process's hub, or
 * from the store when the turn runs elsewhere (or ran before).
 */
export class TurnEventFollower {
  readonly hub: TurnEventHub;
  private readonly pollMs: number;
  private readonly followMaxMs: number;
  private readonly finalGraceMs: number;

  constructor(private readonly options: TurnEventFollowerOptions) {
    this.hub = options.hub;
    this.pollMs = options.pollMs ?? DEFAULT_EVENT_POLL_MS;
    this.followMaxMs = options.followMaxMs ?? DEFAULT_FOLLOW_MAX_MS;
    this.finalGraceMs = options.finalGraceMs ?? DEFAULT_FINAL_EVENT_GRACE_MS;
  }

  /**
   * The turn's events after `afterId`, until its final event (`done`, `failed`, or `approval_requested` while it waits), `signal`, the
   * follow's time limit, or the turn's deletion. A turn already finished yields what is stored and
   * its final event (inferred from its record when none is stored, under the id after the last one);
   * after an id past a finished turn's last event it yields nothing. A turn not begun yet is waited for.
   */
  async *follow(turnId: string, afterId: number, signal: AbortSignal): AsyncGenerator<TurnEvent> {
    try {
      yield* this.events(turnId, afterId, signal);
    } catch (error) {
      this.options.onError?.(error);
      throw error;
    }
  }

  private async *events(turnId: string, afterId: number, signal: AbortSignal): AsyncGenerator<TurnEvent> {
    const stop = AbortSignal.any([signal, AbortSignal.timeout(this.followMaxMs)]);
    let last = afterId;
    // The store is read at the start and whenever the hub stayed quiet for a poll period, never per live event.
    let quiet = true;
    let seen = false;
    while (!stop.aborted) {
      const wait = this.hub.next(turnId);
      try {
        let events = this.hub.after(turnId, last);
        if (events.length === 0 && quiet) events = await storedEvents(this.options.store, turnId, last);
        for (const event of events) {
          yield event;
          last = event.id;
          if (isFinalEvent(event)) return;
        }
        if (events.length > 0) continue;
        if (quiet) {
          const turn = await this.options.turns.get(turnId);
          // A turn about to begin has no record yet; one that had a record and lost it was deleted.
          if (!turn && seen) return;
          seen ||= turn !== null;
          // A turn waiting for decisions says nothing more until they are made: the follow ends at its approval_requested, as the POST's stream does.
          if (turn?.status === "awaiting_approval" && (await this.pastApprovalRequest(turn, turnId, last))) return;
          const final = turn && Date.now() - turn.updatedAt.getTime() >= this.finalGraceMs ? finalEventOf(turn) : undefined;
          // Past the grace, read once more before inferring one, from the client's last event on.
          if (final) {
            // An id past the turn's last event names nothing the turn said: nothing more follows, and no event is made up for it.
            if (last > Math.max(await this.options.store.lastId(turnId), this.hub.lastId(turnId))) return;
            const stored = await storedEvents(this.options.store, turnId, Math.max(last - 1, 0));
            if (stored.some((e) => e.id > last)) continue;
            // A client that read the stored final event and reconnected after it has the whole turn: no second one, under a new id.
            if (stored.some((e) => e.id === last && e.type === final.type)) return;
            yield { ...final, id: last + 1 } as TurnEvent;
            return;
          }
        }
        const woken = new AbortController();
        quiet = await Promise.race([wait.promise.then(() => false), sleep(this.pollMs, AbortSignal.any([stop, woken.signal])).then(() => true)]);
        woken.abort();
      } finally {
        wait.cancel();
      }
    }
  }

  /**
   * Whether a follow of a waiting turn has nothing more to wait for: the client's last event is
   * the turn's `approval_requested`, or the pause is older than the grace (its event stored, or lost).
   */
  private async pastApprovalRequest(turn: TurnDocument, turnId: string, last: number): Promise<boolean> {
    const stored = await storedEvents(this.options.store, turnId, Math.max(last - 1, 0));
    if (stored.some((e) => e.id > last)) return false;
    return stored.some((e) => e.id === last && e.type === "approval_requested") || Date.now() - turn.updatedAt.getTime() >= this.finalGraceMs;
  }
}
