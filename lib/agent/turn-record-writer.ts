import type { ModelCallRecord } from "../store/turn-record.js";
import type { ClaimedTurn, TurnStore } from "../store/turn-store.js";
import type { WriteFence } from "../store/write-fence.js";

/** A step of a turn under way, as the graph reports it (which step, which tools, how many model calls so far). */
export interface TurnStep {
  step: "model" | "tool";
  tool?: string;
  modelCalls: number;
}

/**
 * What the graph writes to a turn's record while it runs: each model call (what was sent, tokens,
 * usage, cost) and the step it is at. One per attempt, made by the runner over the turn it claimed
 * and that attempt's fence, so every write is the attempt's own and stops once it lost the conversation.
 */
export class TurnRecordWriter {
  constructor(
    private readonly turns: Pick<TurnStore, "recordModelCall" | "setProgress">,
    private readonly turn: ClaimedTurn,
    private readonly fence: WriteFence,
  ) {}

  /** Records one model call; keyed by its index, so a resumed turn overwrites. */
  modelCall(record: ModelCallRecord): Promise<void> {
    return this.turns.recordModelCall(this.turn, record, this.fence);
  }

  /** Records the step the turn is at (the `/v1` turn's `progress`). */
  progress(step: TurnStep): Promise<void> {
    return this.turns.setProgress(this.turn, step, this.fence);
  }
}
