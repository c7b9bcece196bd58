import { describe, expect, it } from "vitest";
import { Semaphore } from "../../lib/mcp/semaphore.js";

describe("Semaphore", () => {
  describe("acquire", () => {
    it("returns at once while slots are free, and holds the next until one is released", async () => {
      const slots = new Semaphore(2);
      const a = await slots.acquire();
      await slots.acquire();
      let third = false;
      const pending = slots.acquire().then((release) => {
        third = true;
        return release;
      });
      await new Promise((r) => setTimeout(r, 10));
      expect(third).toBe(false);
      a();
      a(); // a second release of the same slot frees nothing more
      (await pending)();
      expect(third).toBe(true);
      expect(slots.held).toBe(1);
    });

    it("throws the signal's reason when it aborts while waiting, and frees no slot for it", async () => {
      const slots = new Semaphore(1);
      await slots.acquire();
      const controller = new AbortController();
      const waiting = slots.acquire(controller.signal);
      controller.abort(new Error("timed out"));
      await expect(waiting).rejects.toThrow("timed out");
      expect(slots.held).toBe(1);
    });
  });
});
