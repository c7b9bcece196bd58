/** A channel's calls made one at a time, in order, for a stream whose events must not wait for them. */
export class SerialCalls {
  #chain: Promise<void> = Promise.resolve();

  /** Runs `op` after every call added before it; its failure is the op's own to handle. */
  add(op: () => Promise<void>): void {
    this.#chain = this.#chain.then(op);
  }

  /** Waits for every call added, those added meanwhile included. */
  async settled(): Promise<void> {
    for (let chain = this.#chain; ; chain = this.#chain) {
      await chain;
      if (chain === this.#chain) return;
    }
  }
}
