import type { TurnJob } from "../channels/turn-job.js";
import { turnJobGroupId, type TurnQueue } from "./turn-queue.js";

/**
 * The turn queue of local mode: jobs run in this process, one at a time per conversation (as
 * FIFO groups do), without blocking the caller. A failure goes to `onError`; there is no retry.
 */
export class InProcessTurnQueue implements TurnQueue {
  private readonly tails = new Map<string, Promise<void>>();

  constructor(
    private readonly process: (job: TurnJob) => Promise<void>,
    private readonly onError: (error: unknown, job: TurnJob) => void = () => undefined,
  ) {}

  async enqueue(job: TurnJob): Promise<void> {
    const group = turnJobGroupId(job);
    const tail = (this.tails.get(group) ?? Promise.resolve())
      .then(() => this.process(job))
      .catch((error: unknown) => this.onError(error, job))
      .finally(() => {
        if (this.tails.get(group) === tail) this.tails.delete(group);
      });
    this.tails.set(group, tail);
  }

  /** Resolves when every job enqueued so far has finished (shutdown, tests). */
  async drain(): Promise<void> {
    while (this.tails.size > 0) await Promise.all([...this.tails.values()]);
  }
}
