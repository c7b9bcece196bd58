import { randomUUID } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isCiphertext } from "../../lib/crypto/content-cipher.js";
import { FieldCipher } from "../../lib/crypto/field-cipher.js";
import { LocalTenantKeys } from "../../lib/crypto/local-tenant-keys.js";
import { MongoTurnQueue, type MongoTurnQueueOptions } from "../../lib/queue/mongo-turn-queue.js";
import type { TurnJob } from "../../lib/queue/turn-job.js";
import { COLLECTIONS } from "../../lib/store/collections.js";
import { openTestDatabase, type TestDatabase } from "../support/mongo.js";
import { sampleSlackJob } from "../support/turn-jobs.js";
import { describeTurnQueueContract } from "./turn-queue-contract.js";

let database: TestDatabase;
beforeAll(async () => {
  database = await openTestDatabase("queue");
});
afterAll(async () => {
  await database.cleanup();
});

/** A queue on a collection of its own database prefix, emptied first. */
async function queueWith(options: Partial<MongoTurnQueueOptions> = {}): Promise<MongoTurnQueue> {
  await database.db.collection(COLLECTIONS.turnJobs).deleteMany({});
  const queue = new MongoTurnQueue(database.db, { handle: async () => undefined, ...options });
  await queue.setup();
  return queue;
}

const later = (ms: number) => new Date(Date.now() + ms);
const jobOf = (n: number, conversation = "1"): TurnJob =>
  sampleSlackJob({ dedupeId: `Ev${n}-${randomUUID().slice(0, 4)}`, conversationKey: `T1:C1:${conversation}` });

describeTurnQueueContract("MongoTurnQueue", async () => {
  const queue = await queueWith();
  return {
    queue,
    sent: async () => (await queue.collection.find().sort({ enqueuedAt: 1 }).toArray()).map((d) => ({ job: d.job, group: d.group, deduplicationId: d._id })),
  };
});

describe("MongoTurnQueue", () => {
  describe("enqueue", () => {
    it("stores the job's text encrypted under its owner's tenant keys, and hands the handler the text", async () => {
      const cipher = new FieldCipher({
        keys: new LocalTenantKeys(await mkdtemp(join(tmpdir(), "threadwise-queue-keys-"))),
        tenantOf: () => Promise.reject(new Error("jobs name their tenant")),
      });
      const handled: TurnJob[] = [];
      const queue = await queueWith({ cipher, handle: async (job) => void handled.push(job) });
      const job = { ...jobOf(1), content: "MARKER-queue the quarterly numbers" };
      await queue.enqueue(job);
      const raw = await database.db.collection(COLLECTIONS.turnJobs).findOne({});
      expect(isCiphertext(raw?.job.content)).toBe(true);
      expect(JSON.stringify(raw)).not.toContain("MARKER-queue");
      queue.start();
      await queue.drain();
      await queue.stop();
      expect(handled.map((j) => j.content)).toEqual(["MARKER-queue the quarterly numbers"]);
    });

    it("stores an edit a job hands over encrypted too, and hands the handler the arguments", async () => {
      const cipher = new FieldCipher({
        keys: new LocalTenantKeys(await mkdtemp(join(tmpdir(), "threadwise-queue-keys-"))),
        tenantOf: () => Promise.reject(new Error("jobs name their tenant")),
      });
      const handled: TurnJob[] = [];
      const queue = await queueWith({ cipher, handle: async (job) => void handled.push(job) });
      const edits = { "approval-1": { note: "MARKER-edit call the supplier" } };
      await queue.enqueue({ ...jobOf(1), resume: "k", edits });
      const raw = await database.db.collection(COLLECTIONS.turnJobs).findOne({});
      expect(isCiphertext(raw?.job.edits)).toBe(true);
      expect(JSON.stringify(raw)).not.toContain("MARKER-edit");
      queue.start();
      await queue.drain();
      await queue.stop();
      expect(handled.map((j) => j.edits)).toEqual([edits]);
    });
  });

  describe("receive", () => {
    it("delivers a job whose consumer died again once its visibility lapses, counting the receive", async () => {
      const queue = await queueWith({ visibilityTimeoutMs: 1_000 });
      await queue.enqueue(jobOf(1));
      const first = await queue.receive();
      expect(first?.doc.receiveCount).toBe(1);
      expect(await queue.receive(later(500))).toBeUndefined();

      const again = await queue.receive(later(1_001));

      expect(again?.doc._id).toBe(first?.doc._id);
      expect(again?.doc.receiveCount).toBe(2);
      // The dead consumer's receipt no longer finishes it.
      expect(await queue.complete(first!.doc._id, first!.receipt)).toBe(false);
      expect(await queue.complete(again!.doc._id, again!.receipt)).toBe(true);
    });

    it("delivers one job of a conversation at a time, in order, and other conversations' beside it", async () => {
      const queue = await queueWith();
      const [a1, a2, b1] = [jobOf(1, "a"), jobOf(2, "a"), jobOf(3, "b")];
      for (const job of [a1, a2, b1]) await queue.enqueue(job);

      const first = await queue.receive();
      const second = await queue.receive();
      const none = await queue.receive();
      await queue.complete(first!.doc._id, first!.receipt);
      const third = await queue.receive();

      expect([first?.doc.job.dedupeId, second?.doc.job.dedupeId, none, third?.doc.job.dedupeId]).toEqual([a1.dedupeId, b1.dedupeId, undefined, a2.dedupeId]);
    });

    it("delivers a conversation's jobs in the order they were sent when they share a millisecond", async () => {
      const queue = await queueWith();
      const sentAt = new Date(Date.now() - 1_000);
      const jobs = Array.from({ length: 8 }, (_, i) => jobOf(i + 1, "same-ms"));
      for (const job of jobs) await queue.enqueue(job, sentAt);

      const delivered: string[] = [];
      for (let i = 0; i < jobs.length; i++) {
        const next = await queue.receive();
        delivered.push(next!.doc.job.dedupeId);
        await queue.complete(next!.doc._id, next!.receipt);
      }

      expect(delivered).toEqual(jobs.map((j) => j.dedupeId));
    });

    it("moves a job out of receives to the dead-letter status instead of delivering it", async () => {
      const dead: number[] = [];
      const queue = await queueWith({ visibilityTimeoutMs: 10, maxReceives: 2, onDeadLetter: (_job, receives) => dead.push(receives) });
      await queue.enqueue(jobOf(1));
      await queue.receive();
      await queue.receive(later(20));

      expect(await queue.receive(later(40))).toBeUndefined();
      expect(dead).toEqual([2]);
      expect((await queue.collection.findOne())?.status).toBe("dead");
    });
  });

  describe("retryAfter", () => {
    it("delivers the job again after the delay, not before", async () => {
      const queue = await queueWith();
      await queue.enqueue(jobOf(1));
      const first = await queue.receive();
      expect(await queue.retryAfter(first!.doc._id, first!.receipt, 5)).toBe(true);

      expect(await queue.receive(later(4_000))).toBeUndefined();
      expect((await queue.receive(later(5_001)))?.doc.receiveCount).toBe(2);
    });
  });

  describe("extend", () => {
    it("keeps a delivery invisible past its first timeout while its consumer beats", async () => {
      const queue = await queueWith({ visibilityTimeoutMs: 1_000 });
      await queue.enqueue(jobOf(1));
      const first = await queue.receive();
      expect(await queue.extend(first!.doc._id, first!.receipt, later(900))).toBe(true);
      expect(await queue.receive(later(1_500))).toBeUndefined();
    });
  });

  describe("start", () => {
    it("processes queued jobs with the handler, its receive count, and finishes them", async () => {
      const handled: [string, number][] = [];
      const queue = await queueWith({ pollMs: 20, handle: async (job, receives) => void handled.push([job.dedupeId, receives]) });
      const job = jobOf(1);
      await queue.enqueue(job);
      queue.start();
      await queue.drain();
      await queue.stop();
      expect(handled).toEqual([[job.dedupeId, 1]]);
      expect((await queue.collection.findOne())?.status).toBe("done");
    });
  });
});
