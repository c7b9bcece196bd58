import type { TurnEventStore } from "../store/turn-event-store.js";
import type { WriteFence } from "../store/write-fence.js";
import type { TurnEvent } from "./turn-event-types.js";
import { TurnEventHub } from "./turn-event-hub.js";
import { TurnEventRecorder } from "./turn-event-recorder.js";

export interface TurnEventsOptions {
  store: TurnEventStore;
  /** Default: a hub of this instance's own. */
  hub?: TurnEventHub;
}

/**
 * Where a process's turns record their events, one per process: each attempt's recorder writes to
 * the store and publishes to the hub. Following them is `TurnEventFollower`'s, which only what
 * serves clients loads (the worker's bundle does without it).
 */
export class TurnEvents {
  readonly hub: TurnEventHub;

  constructor(private readonly options: TurnEventsOptions) {
    this.hub = options.hub ?? new TurnEventHub();
  }

  /** A recorder for one attempt of a turn, writing under its fence; `listener` hears this attempt's events. */
  record(turnId: string, fence: WriteFence, listener?: (event: TurnEvent) => void): Promise<TurnEventRecorder> {
    return TurnEventRecorder.open({ hub: this.hub, store: this.options.store, turnId, fence, listener });
  }
}
