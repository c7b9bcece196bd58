import type { TurnEventStore } from "../store/turn-event-store.js";
import type { WriteFence } from "../store/write-fence.js";
import type { FinalEventBody, TurnEvent, TurnEventBody } from "./turn-event-types.js";
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

  async emit(event: Exclude<TurnEventBody, { type: "text" } | FinalEventBody>): Promise<void> {
    this.publish(event);
    await this.flush(this.target.fence);
  }

  /**
   * The attempt's final event, told once the attempt has let go of the conversation and written
   * everything else: whoever acts on it (a next question, a decision, a reload) finds the
   * conversation free and the turn recorded. Stored under `fence`, one that holds while the
   * conversation exists, since the attempt's own lease is gone.
   */
  async finish(event: FinalEventBody, fence: WriteFence): Promise<void> {
    this.publish(event);
    await this.flush(fence);
  }

  private async flush(fence: WriteFence): Promise<void> {
    const batch = this.#pending;
    this.#pending = [];
    await this.target.store.append(this.target.turnId, batch, fence);
  }

  private publish(body: TurnEventBody): void {
    const event = { ...body, id: this.nextId++ } as TurnEvent;
    this.#pending.push(event);
    this.target.hub.publish(this.target.turnId, event);
    this.target.listener?.(event);
  }
}
