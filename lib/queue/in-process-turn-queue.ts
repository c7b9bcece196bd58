import { MESSAGING_SYSTEMS, withConsumerSpan, withProducerSpan } from "../observability/tracing.js";
import type { TurnJob } from "./turn-job.js";
import { turnJobGroupId, type TurnQueue } from "./turn-queue.js";

/**
 * Deliveries processed at once, as the worker's reserved concurrency caps them in AWS. Turns
 * share the local server's one event loop with the webhooks, which must answer at once.
 */
export const DEFAULT_IN_PROCESS_CONCURRENCY = 4;
/** The queue hop's spans (lib/observability/tracing.ts). */
const HOP = { system: MESSAGING_SYSTEMS.inProcess };

export interface InProcessTurnQueueOptions {
  /** Called with a handler's thrown error; the job ends. Default: nothing. */
  onError?: (error: unknown, job: TurnJob) => void;
  /** Default: {@link DEFAULT_IN_PROCESS_CONCURRENCY}. */
  concurrency?: number;
}

/** What processing one delivery asks of the queue: nothing (done), or to deliver the job again later. */
export type InProcessDelivery = void | { retryAfterSeconds: number };

/**
 * Processes one delivery of a job; `receiveCount` counts deliveries, this one included, as SQS's
 * `ApproximateReceiveCount` does. It decides when to stop asking for retries.
 */
export type InProcessJobHandler = (job: TurnJob, receiveCount: number) => Promise<InProcessDelivery>;

/**
 * The turn queue of local mode: jobs run in this process, one at a time per conversation (as
 * FIFO groups do), without blocking the caller. A job that asks to be retried is delivered again
 * after its delay, holding its group (not a worker slot) meanwhile, as an in-flight FIFO
 * message does. A thrown error goes to `onError` and ends the job.
 */
export class InProcessTurnQueue implements TurnQueue {
  private readonly tails = new Map<string, Promise<void>>();
  private readonly onError: (error: unknown, job: TurnJob) => void;
  private readonly concurrency: number;
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    private readonly handle: InProcessJobHandler,
    options: InProcessTurnQueueOptions = {},
  ) {
    this.onError = options.onError ?? (() => undefined);
    this.concurrency = options.concurrency ?? DEFAULT_IN_PROCESS_CONCURRENCY;
  }

  async enqueue(job: TurnJob): Promise<void> {
    await withProducerSpan(HOP, async (carrier) => this.append(carrier ? { ...job, trace: carrier } : job));
  }

  private append(job: TurnJob): void {
    const group = turnJobGroupId(job);
    const tail = (this.tails.get(group) ?? Promise.resolve())
      .then(() => this.deliver(job))
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

  private async deliver(job: TurnJob): Promise<void> {
    for (let receiveCount = 1; ; receiveCount += 1) {
      const outcome = await this.withSlot(() => withConsumerSpan(HOP, job.trace, () => this.handle(job, receiveCount)));
      if (!outcome) return;
      // Unref'd: a pending retry does not keep a stopping process alive.
      await new Promise<void>((resolve) => setTimeout(resolve, outcome.retryAfterSeconds * 1000).unref());
    }
  }

  private async withSlot<T>(run: () => Promise<T>): Promise<T> {
    if (this.running >= this.concurrency) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.running += 1;
    try {
      return await run();
    } finally {
      // The slot passes straight to the next waiter, so `running` never dips below what runs.
      const next = this.waiting.shift();
      if (next) next();
      else this.running -= 1;
    }
  }
}
