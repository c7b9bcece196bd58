import { describe, expect, it } from "vitest";
import { PeriodicTask, type TaskTimer } from "../../lib/local/periodic-task.js";
import { Gate } from "../support/gate.js";

/** A timer the test ticks by hand: `tick()` is one interval elapsing. */
function manualTimer() {
  let run: (() => void) | undefined;
  const intervals: number[] = [];
  const timer: TaskTimer = {
    setInterval: (r, ms) => {
      run = r;
      intervals.push(ms);
      return "handle";
    },
    clearInterval: (handle) => {
      if (handle === "handle") run = undefined;
    },
  };
  return {
    timer,
    intervals,
    tick: () => run?.(),
    get armed() {
      return run !== undefined;
    },
  };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe("PeriodicTask", () => {
  describe("start", () => {
    it("runs the task on each tick of the given interval, and arms one timer however often it is started", async () => {
      const clock = manualTimer();
      let runs = 0;
      const task = new PeriodicTask(
        async () => void (runs += 1),
        60_000,
        () => undefined,
        clock.timer,
      );
      task.start();
      task.start();
      expect(clock.intervals).toEqual([60_000]);
      expect(runs).toBe(0);
      clock.tick();
      await settle();
      clock.tick();
      await settle();
      expect(runs).toBe(2);
    });

    it("skips a tick while a run is in flight, so two runs never overlap", async () => {
      const clock = manualTimer();
      const gate = new Gate();
      let runs = 0;
      const task = new PeriodicTask(
        async () => {
          runs += 1;
          await gate.pass();
        },
        1_000,
        () => undefined,
        clock.timer,
      );
      task.start();
      clock.tick();
      await gate.reached;
      clock.tick();
      await settle();
      expect(runs).toBe(1);
      gate.open();
      await settle();
      clock.tick();
      await settle();
      expect(runs).toBe(2);
    });

    it("reports a failed run and runs again on the next tick", async () => {
      const clock = manualTimer();
      const errors: unknown[] = [];
      let runs = 0;
      const task = new PeriodicTask(
        async () => {
          runs += 1;
          if (runs === 1) throw new Error("database down");
        },
        1_000,
        (error) => errors.push(error),
        clock.timer,
      );
      task.start();
      clock.tick();
      await settle();
      clock.tick();
      await settle();
      expect((errors as Error[]).map((e) => e.message)).toEqual(["database down"]);
      expect(runs).toBe(2);
    });
  });

  describe("stop", () => {
    it("disarms the timer and resolves only after the run in flight ends", async () => {
      const clock = manualTimer();
      const gate = new Gate();
      let finished = false;
      const task = new PeriodicTask(
        async () => {
          await gate.pass();
          finished = true;
        },
        1_000,
        () => undefined,
        clock.timer,
      );
      task.start();
      clock.tick();
      await gate.reached;
      const stopped = task.stop();
      expect(clock.armed).toBe(false);
      gate.open();
      await stopped;
      expect(finished).toBe(true);
    });

    it("resolves at once when no run is in flight, and a stopped task can start again", async () => {
      const clock = manualTimer();
      let runs = 0;
      const task = new PeriodicTask(
        async () => void (runs += 1),
        1_000,
        () => undefined,
        clock.timer,
      );
      task.start();
      await task.stop();
      expect(clock.armed).toBe(false);
      task.start();
      clock.tick();
      await settle();
      expect(runs).toBe(1);
    });
  });
});
