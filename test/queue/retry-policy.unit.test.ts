import {
  busyRetryDelayMs,
  DEFAULT_BUSY_RETRY_BASE_MS,
  DEFAULT_BUSY_RETRY_MAX_MS,
  DEFAULT_BUSY_RETRY_RESERVE_MS,
  DEFAULT_BUSY_RETRY_WINDOW_MS,
  DEFAULT_RETRY_MAX_SECONDS,
  queueRetryDelaySeconds,
  slotRetryDelayMs,
} from "../../lib/queue/retry-policy.js";

describe("retry policy", () => {
  describe("busyRetryDelayMs", () => {
    it("returns a full-jitter draw under a ceiling that doubles with each failure, up to the maximum", () => {
      expect(busyRetryDelayMs({ failures: 1, elapsedMs: 0 }, 0.999)).toBe(DEFAULT_BUSY_RETRY_BASE_MS - 1);
      expect(busyRetryDelayMs({ failures: 3, elapsedMs: 0 }, 0.5)).toBe(2 * DEFAULT_BUSY_RETRY_BASE_MS);
      expect(busyRetryDelayMs({ failures: 30, elapsedMs: 0 }, 0.5)).toBe(DEFAULT_BUSY_RETRY_MAX_MS / 2);
      expect(busyRetryDelayMs({ failures: 4, elapsedMs: 0 }, 0)).toBe(0);
    });

    it("returns delays that spread many workers' retries over the ceiling, not on one instant", () => {
      const draws = Array.from({ length: 100 }, (_, i) => busyRetryDelayMs({ failures: 4, elapsedMs: 0 }, i / 100)!);
      expect(new Set(draws).size).toBe(100);
      expect(Math.max(...draws)).toBeLessThan(8 * DEFAULT_BUSY_RETRY_BASE_MS);
    });

    it("returns undefined when the wait would end past the busy window", () => {
      expect(busyRetryDelayMs({ failures: 2, elapsedMs: DEFAULT_BUSY_RETRY_WINDOW_MS - 100 }, 0.5)).toBeUndefined();
      expect(busyRetryDelayMs({ failures: 2, elapsedMs: DEFAULT_BUSY_RETRY_WINDOW_MS - 1_000 }, 0.5)).toBe(1_000);
    });

    it("returns undefined when the wait would leave less than the reserve of the worker's time (and of the message's visibility)", () => {
      expect(busyRetryDelayMs({ failures: 1, elapsedMs: 0, remainingMs: DEFAULT_BUSY_RETRY_RESERVE_MS + 100 }, 0.5)).toBeUndefined();
      expect(busyRetryDelayMs({ failures: 1, elapsedMs: 0, remainingMs: DEFAULT_BUSY_RETRY_RESERVE_MS + 500 }, 0.5)).toBe(500);
    });

    it("returns delays by the given policy", () => {
      expect(busyRetryDelayMs({ failures: 2, elapsedMs: 0 }, 0.5, { baseMs: 10 })).toBe(10);
      expect(busyRetryDelayMs({ failures: 1, elapsedMs: 0 }, 0.5, { windowMs: 0 })).toBeUndefined();
    });
  });

  describe("slotRetryDelayMs", () => {
    it("returns the refusal's Retry-After while it ends within the busy window", () => {
      expect(slotRetryDelayMs({ elapsedMs: 0 }, 5)).toBe(5_000);
      expect(slotRetryDelayMs({ elapsedMs: DEFAULT_BUSY_RETRY_WINDOW_MS - 5_000 }, 5)).toBe(5_000);
    });

    it("returns undefined when the wait would end past the window or leave less than the reserve of the worker's time", () => {
      expect(slotRetryDelayMs({ elapsedMs: DEFAULT_BUSY_RETRY_WINDOW_MS - 4_999 }, 5)).toBeUndefined();
      expect(slotRetryDelayMs({ elapsedMs: 0, remainingMs: DEFAULT_BUSY_RETRY_RESERVE_MS + 4_999 }, 5)).toBeUndefined();
      expect(slotRetryDelayMs({ elapsedMs: 0, remainingMs: DEFAULT_BUSY_RETRY_RESERVE_MS + 5_000 }, 5)).toBe(5_000);
    });
  });

  describe("queueRetryDelaySeconds", () => {
    it("returns 10 s doubled on each receive, with up to a fifth added at random, capped at the maximum", () => {
      expect(queueRetryDelaySeconds(1, 0)).toBe(10);
      expect(queueRetryDelaySeconds(2, 0)).toBe(20);
      expect(queueRetryDelaySeconds(2, 0.99)).toBe(24);
      expect(queueRetryDelaySeconds(20, 0.99)).toBe(DEFAULT_RETRY_MAX_SECONDS);
    });

    it("returns never less than the error's Retry-After", () => {
      expect(queueRetryDelaySeconds(1, 0, 45)).toBe(45);
      expect(queueRetryDelaySeconds(3, 0, 5)).toBe(40);
    });
  });
});
