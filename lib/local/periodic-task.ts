/** Where the task's timer comes from; tests pass a controlled one. */
export interface TaskTimer {
  setInterval(run: () => void, ms: number): unknown;
  clearInterval(handle: unknown): void;
}

const NODE_TIMER: TaskTimer = {
  setInterval: (run, ms) => setInterval(run, ms).unref(),
  clearInterval: (handle) => clearInterval(handle as NodeJS.Timeout),
};

/**
 * Runs `task` every `intervalMs` on the local server (what a schedule does in AWS): never two
 * runs at once (a tick while one runs is skipped), a failed run only reported, and `stop()`
 * resolves once no run is in flight, so the server closes its database after the last one.
 */
export class PeriodicTask {
  #handle: unknown;
  #running: Promise<void> | undefined;

  constructor(
    private readonly task: () => Promise<void>,
    private readonly intervalMs: number,
    private readonly onError: (error: unknown) => void,
    private readonly timer: TaskTimer = NODE_TIMER,
  ) {}

  start(): void {
    if (this.#handle !== undefined) return;
    this.#handle = this.timer.setInterval(() => void this.#tick(), this.intervalMs);
  }

  #tick(): Promise<void> {
    if (this.#running) return this.#running;
    this.#running = this.task()
      .catch(this.onError)
      .finally(() => {
        this.#running = undefined;
      });
    return this.#running;
  }

  async stop(): Promise<void> {
    if (this.#handle !== undefined) this.timer.clearInterval(this.#handle);
    this.#handle = undefined;
    await this.#running;
  }
}
