/**
 * Explicit synchronisation between a test and the code it drives: the code calls `pass()` and
 * waits there until the test calls `open()`; the test awaits `reached` to know the code got there.
 */
export class Gate {
  readonly reached: Promise<void>;
  private markReached!: () => void;
  private readonly opened: Promise<void>;
  private markOpened!: () => void;

  constructor() {
    this.reached = new Promise((resolve) => (this.markReached = resolve));
    this.opened = new Promise((resolve) => (this.markOpened = resolve));
  }

  async pass(): Promise<void> {
    this.markReached();
    await this.opened;
  }

  open(): void {
    this.markOpened();
  }
}
