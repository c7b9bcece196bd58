import { describe, expect, it } from "vitest";
import { systemClock } from "../lib/clock.js";

describe("systemClock", () => {
  describe("now", () => {
    it("returns the current instant", () => {
      const before = Date.now();
      const now = systemClock.now().getTime();
      expect(now).toBeGreaterThanOrEqual(before);
      expect(now).toBeLessThanOrEqual(Date.now());
    });
  });

  describe("every", () => {
    it("calls the tick repeatedly until stopped, a failed tick not stopping it", async () => {
      let ticks = 0;
      let stop = () => undefined as void;
      const thirdTick = new Promise<void>((resolve) => {
        stop = systemClock.every(1, async () => {
          ticks += 1;
          if (ticks === 3) resolve();
          if (ticks === 1) throw new Error("heartbeat failed");
        });
      });
      await thirdTick;
      stop();
      const stoppedAt = ticks;
      // Long enough for several more ticks had the timer not been cleared.
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(ticks).toBe(stoppedAt);
    });
  });
});
