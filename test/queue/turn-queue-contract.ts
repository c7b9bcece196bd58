import { describe, expect, it } from "vitest";
import type { TurnJob } from "../../lib/queue/turn-job.js";
import { turnJobDeduplicationId, turnJobGroupId, type TurnQueue } from "../../lib/queue/turn-queue.js";
import { sampleSlackJob } from "../support/turn-jobs.js";

/** What a queue backend handed on, as the consumer will get it. */
export interface SentJob {
  job: TurnJob;
  group: string;
  deduplicationId: string;
}

export interface TurnQueueDriver {
  queue: TurnQueue;
  /** Every job the backend holds (or was sent), oldest first. */
  sent(): Promise<SentJob[]>;
}

/**
 * The contract every turn queue keeps (SQS FIFO in AWS, MongoDB locally): the job reaches the
 * worker unchanged, one group per conversation, one deduplication id per delivered event, a
 * resume apart from its event's first delivery. `init` gives a fresh, empty backend per test.
 */
export function describeTurnQueueContract(name: string, init: () => Promise<TurnQueueDriver>): void {
  describe(`${name} (turn queue contract)`, () => {
    describe("enqueue", () => {
      it("hands on the job unchanged, grouped by conversation and deduplicated by its event", async () => {
        const { queue, sent } = await init();
        const job = sampleSlackJob({ content: "sales\ufffe by\uffff region \ud83d\udc4d" });
        await queue.enqueue(job);
        expect(await sent()).toEqual([{ job, group: turnJobGroupId(job), deduplicationId: turnJobDeduplicationId(job) }]);
      });

      it("hands on a second enqueue of the same event under the same deduplication id", async () => {
        const { queue, sent } = await init();
        await queue.enqueue(sampleSlackJob());
        await queue.enqueue(sampleSlackJob());
        expect(new Set((await sent()).map((s) => s.deduplicationId)).size).toBe(1);
      });

      it("keeps a resume apart from its event's first delivery, in the same group", async () => {
        const { queue, sent } = await init();
        await queue.enqueue(sampleSlackJob());
        await queue.enqueue(sampleSlackJob({ resume: "decisions-1" }));
        const jobs = await sent();
        expect(new Set(jobs.map((s) => s.deduplicationId)).size).toBe(2);
        expect(new Set(jobs.map((s) => s.group)).size).toBe(1);
      });

      it("puts two conversations' jobs in two groups", async () => {
        const { queue, sent } = await init();
        await queue.enqueue(sampleSlackJob());
        await queue.enqueue(sampleSlackJob({ conversationKey: "T1:C1:1700000000.000200", dedupeId: "Ev002" }));
        expect(new Set((await sent()).map((s) => s.group)).size).toBe(2);
      });
    });
  });
}
