/** At most `size` holders at once; the others wait in order, or give up when their signal aborts. */
export class Semaphore {
  #free: number;
  readonly #waiting: (() => void)[] = [];

  constructor(readonly size: number) {
    this.#free = size;
  }

  /** Calls in flight now. */
  get held(): number {
    return this.size - this.#free;
  }

  /** Resolves with the release function once a slot is free; rejects with the signal's reason when it aborts first. */
  acquire(signal?: AbortSignal): Promise<() => void> {
    const release = once(() => {
      const next = this.#waiting.shift();
      if (next) next();
      else this.#free += 1;
    });
    if (this.#free > 0) {
      this.#free -= 1;
      return Promise.resolve(release);
    }
    return new Promise((resolve, reject) => {
      const grant = () => {
        signal?.removeEventListener("abort", onAbort);
        resolve(release);
      };
      const onAbort = () => {
        const i = this.#waiting.indexOf(grant);
        if (i >= 0) this.#waiting.splice(i, 1);
        reject(signal?.reason);
      };
      if (signal?.aborted) return reject(signal.reason);
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiting.push(grant);
    });
  }
}

function once(fn: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    fn();
  };
}
