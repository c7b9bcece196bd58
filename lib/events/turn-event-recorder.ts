import type { TurnEventStore } from "../store/turn-event-store.js";
import type { WriteFence } from "../store/write-fence.js";
import type { TurnEvent, TurnEventBody } from "./turn-event.js";
import type { TurnEventHub } from "./turn-event-hub.js";

/** What a running turn reports to: the graph's nodes and the runner. */
export interface TurnEventSink {
  /** A text delta: live at once, stored with the next step's batch. */
  text(modelCall: number, delta: string): void;
  /** A step event: live at once, and stored with the text before it in one write. */
  emit(event: Exclude<TurnEventBody, { type: "text" }>): Promise<void>;
}

/** Where one attempt's events go. */
export interface RecorderTarget {
  hub: TurnEventHub;
  store: TurnEventStore;
  turnId: string;
  fence: WriteFence;
  /** Hears the attempt's events as they are published (a channel streaming the answer). */
  listener?: (event: TurnEvent) => void;
}

/**
 * One attempt's events: published to the hub as they come, and written to the store in one
 * batch per step event (never per delta), under the attempt's fence. Ids continue from the
 * turn's earlier attempts, so a client's `Last-Event-ID` stays meaningful across them.
 */
export class TurnEventRecorder implements TurnEventSink {
  #pending: TurnEvent[] = [];

  private constructor(
    private readonly target: RecorderTarget,
    private nextId: number,
  ) {}

  static async open(target: RecorderTarget): Promise<TurnEventRecorder> {
    const last = Math.max(target.hub.lastId(target.turnId), await target.store.lastId(target.turnId));
    return new TurnEventRecorder(target, last + 1);
  }

  text(modelCall: number, delta: string): void {
    if (delta.length > 0) this.publish({ type: "text", modelCall, delta });
  }

  async emit(event: Exclude<TurnEventBody, { type: "text" }>): Promise<void> {
    this.publish(event);
    const batch = this.#pending;
    this.#pending = [];
    await this.target.store.append(this.target.turnId, batch, this.target.fence);
  }

  private publish(body: TurnEventBody): void {
    const event = { ...body, id: this.nextId++ } as TurnEvent;
    this.#pending.push(event);
    this.target.hub.publish(this.target.turnId, event);
    this.target.listener?.(event);
  }
}
