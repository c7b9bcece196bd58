import { InProcessTurnQueue } from "../../lib/queue/in-process-turn-queue.js";
import { sampleSlackJob } from "../support/turn-jobs.js";

describe("InProcessTurnQueue", () => {
  describe("enqueue", () => {
    it("returns at once and runs one conversation's jobs in order, one at a time", async () => {
      const events: string[] = [];
      const queue = new InProcessTurnQueue(async (j) => {
        events.push(`start ${j.dedupeId}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
        events.push(`end ${j.dedupeId}`);
      });
      await queue.enqueue(sampleSlackJob({ dedupeId: "a" }));
      await queue.enqueue(sampleSlackJob({ dedupeId: "b" }));
      expect(events).not.toContain("end a");
      await queue.drain();
      expect(events).toEqual(["start a", "end a", "start b", "end b"]);
    });

    it("returns other conversations' jobs without waiting for a slow one", async () => {
      const events: string[] = [];
      // The slow job finishes only after the fast one ran: a queue that made it wait would never finish.
      let fastRan!: () => void;
      const fast = new Promise<void>((resolve) => (fastRan = resolve));
      const queue = new InProcessTurnQueue(async (j) => {
        if (j.dedupeId === "slow") await fast;
        events.push(j.dedupeId);
        if (j.dedupeId === "fast") fastRan();
      });
      await queue.enqueue(sampleSlackJob({ dedupeId: "slow" }));
      await queue.enqueue(sampleSlackJob({ dedupeId: "fast", conversationKey: "other" }));
      await queue.drain();
      expect(events).toEqual(["fast", "slow"]);
    });

    it("runs at most `concurrency` jobs at once across conversations", async () => {
      let running = 0;
      let most = 0;
      const queue = new InProcessTurnQueue(
        async () => {
          running += 1;
          most = Math.max(most, running);
          await new Promise((resolve) => setTimeout(resolve, 10));
          running -= 1;
        },
        { concurrency: 2 },
      );
      for (let i = 0; i < 6; i += 1) await queue.enqueue(sampleSlackJob({ dedupeId: `c${i}`, conversationKey: `conversation-${i}` }));
      await queue.drain();
      expect(most).toBe(2);
    });

    it("delivers a job again after the delay it asks for, counting receives, and holds its group meanwhile", async () => {
      const deliveries: string[] = [];
      const queue = new InProcessTurnQueue(async (j, receiveCount) => {
        deliveries.push(`${j.dedupeId}#${receiveCount}`);
        if (j.dedupeId === "flaky" && receiveCount < 3) return { retryAfterSeconds: 0.01 };
      });
      await queue.enqueue(sampleSlackJob({ dedupeId: "flaky" }));
      await queue.enqueue(sampleSlackJob({ dedupeId: "next" }));
      await queue.drain();
      expect(deliveries).toEqual(["flaky#1", "flaky#2", "flaky#3", "next#1"]);
    });

    it("returns a failure to onError and keeps running the group", async () => {
      const failures: string[] = [];
      const done: string[] = [];
      const queue = new InProcessTurnQueue(
        async (j) => {
          if (j.dedupeId === "bad") throw new Error("boom");
          done.push(j.dedupeId);
        },
        { onError: (_error, j) => failures.push(j.dedupeId) },
      );
      await queue.enqueue(sampleSlackJob({ dedupeId: "bad" }));
      await queue.enqueue(sampleSlackJob({ dedupeId: "good" }));
      await queue.drain();
      expect(failures).toEqual(["bad"]);
      expect(done).toEqual(["good"]);
    });
  });
});
