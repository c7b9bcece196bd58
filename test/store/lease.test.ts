import { describe, expect, it } from "vitest";
import { MongoClient } from "mongodb";
import { ConversationStore } from "../../lib/store/conversation-store.js";
import { ConversationLease, MAX_RETRY_AFTER_S } from "../../lib/store/lease.js";
import { DEFAULT_LEASE_TTL_MS } from "../../lib/config/database-config.js";
import { ManualClock } from "../support/manual-clock.js";
import { mongoUri } from "../support/mongo.js";
import { useStoreFixture } from "../support/store-fixture.js";
import { apiPrincipal } from "../../lib/auth/principal.js";

const owner = apiPrincipal("alice");
const RETENTION_MS = 86_400_000;
const { database, stores } = useStoreFixture("lease", (db) => ({ conversations: new ConversationStore(db) }));
const { conversations } = stores;

function leaseOn(clock: ManualClock): ConversationLease {
  return new ConversationLease(conversations.collection, { retentionMs: RETENTION_MS, clock });
}

const newConversation = async () => (await conversations.create(owner))._id;

describe("ConversationLease", () => {
  describe("acquire", () => {
    it("returns a fence whose epoch rises with every acquisition", async () => {
      const lease = leaseOn(new ManualClock());
      const id = await newConversation();
      const first = await lease.acquire(id, "t1");
      await lease.release(first);
      const second = await lease.acquire(id, "t2");
      expect(first.epoch).toBe(1);
      expect(second.epoch).toBe(2);
      expect(second.expiresAt.getTime() - new ManualClock().now().getTime()).toBe(RETENTION_MS);
    });

    it("throws ConflictError with a short Retry-After while another holder's lease is unexpired", async () => {
      const lease = leaseOn(new ManualClock());
      const id = await newConversation();
      await lease.acquire(id, "t1");
      await expect(lease.acquire(id, "t2")).rejects.toMatchObject({ name: "ConflictError", retryAfterSeconds: MAX_RETRY_AFTER_S });
    });

    it("takes over an expired lease under a higher epoch, and the old fence no longer holds", async () => {
      const clock = new ManualClock();
      const lease = leaseOn(clock);
      const id = await newConversation();
      const old = await lease.acquire(id, "t1");
      clock.pause(DEFAULT_LEASE_TTL_MS);
      const taken = await lease.acquire(id, "t2");
      expect(taken.epoch).toBe((old.epoch ?? 0) + 1);
      await expect(old.guard(async () => undefined)).rejects.toMatchObject({ name: "StaleWriterError", epoch: old.epoch });
      await expect(taken.guard(async () => undefined)).resolves.toBeUndefined();
    });

    it("throws NotFoundError naming the conversation when it does not exist", async () => {
      await expect(leaseOn(new ManualClock()).acquire("no-such-conversation", "t1")).rejects.toMatchObject({
        name: "NotFoundError",
        message: "conversation no-such-conversation not found",
      });
    });

    it.each([
      [1, 1],
      [1_000, 1],
      [1_001, 2],
      [2_500, 3],
      [5_000, 5],
      [60_000, MAX_RETRY_AFTER_S],
    ])("throws ConflictError saying why, with Retry-After from %i ms of lease left: %i s", async (remainingMs, seconds) => {
      const clock = new ManualClock();
      const lease = leaseOn(clock);
      const id = await newConversation();
      await lease.acquire(id, "t1");
      clock.pause(DEFAULT_LEASE_TTL_MS - remainingMs);
      await expect(lease.acquire(id, "t2")).rejects.toMatchObject({
        name: "ConflictError",
        message: "a turn is already running on this conversation",
        retryAfterSeconds: seconds,
      });
    });

    it("takes the lease of a conversation stored without the field", async () => {
      const lease = leaseOn(new ManualClock());
      const id = await newConversation();
      await conversations.collection.updateOne({ _id: id }, { $unset: { lease: "" } });
      expect((await lease.acquire(id, "t1")).epoch).toBe(1);
    });
  });

  describe("release", () => {
    it("clears the lease of its own conversation only, so another holder takes it at once", async () => {
      const lease = leaseOn(new ManualClock());
      const [a, b] = [await newConversation(), await newConversation()];
      await lease.acquire(a, "ta");
      await lease.release(await lease.acquire(b, "tb"));
      expect((await lease.acquire(b, "tb2")).epoch).toBe(2);
      await expect(lease.acquire(a, "ta2")).rejects.toMatchObject({ name: "ConflictError" });
    });

    it("leaves the lease alone when the fence was taken over", async () => {
      const clock = new ManualClock();
      const lease = leaseOn(clock);
      const id = await newConversation();
      const old = await lease.acquire(id, "t1");
      clock.pause(DEFAULT_LEASE_TTL_MS);
      await lease.acquire(id, "t2");
      await lease.release(old);
      await expect(lease.acquire(id, "t3")).rejects.toMatchObject({ name: "ConflictError" });
    });
  });

  describe("keepAlive", () => {
    it("keeps beating, without calling onLost, while a renewal fails (the database unreachable)", async () => {
      const clock = new ManualClock();
      const client = new MongoClient(mongoUri(), { serverSelectionTimeoutMS: 100 });
      const unreachable = new ConversationLease(client.db(database.dbName).collection("conversations"), { retentionMs: RETENTION_MS, clock });
      const fence = await leaseOn(clock).acquire(await newConversation(), "t1");
      await client.close();
      let lost = 0;
      const stop = unreachable.keepAlive(fence, () => void (lost += 1));
      await clock.advance(DEFAULT_LEASE_TTL_MS);
      stop();
      expect(lost).toBe(0);
    });

    it("renews the lease at every beat, so it outlives its period while the turn works", async () => {
      const clock = new ManualClock();
      const lease = leaseOn(clock);
      const id = await newConversation();
      const fence = await lease.acquire(id, "t1");
      const stop = lease.keepAlive(fence, () => expect.unreachable("the lease was not lost"));
      await clock.advance(5 * DEFAULT_LEASE_TTL_MS);
      await expect(lease.acquire(id, "t2")).rejects.toMatchObject({ name: "ConflictError" });
      stop();
      expect(clock.scheduled).toBe(0);
    });

    it("calls onLost once and stops beating when the lease was taken over", async () => {
      const clock = new ManualClock();
      const lease = leaseOn(clock);
      const id = await newConversation();
      const fence = await lease.acquire(id, "t1");
      let lost = 0;
      lease.keepAlive(fence, () => (lost += 1));
      clock.pause(DEFAULT_LEASE_TTL_MS);
      await lease.acquire(id, "t2");
      await clock.advance(3 * DEFAULT_LEASE_TTL_MS);
      expect(lost).toBe(1);
      expect(clock.scheduled).toBe(0);
    });
  });

  describe("revoke", () => {
    it("fences out the holder and keeps turns out while the deletion runs", async () => {
      const lease = leaseOn(new ManualClock());
      const id = await newConversation();
      const fence = await lease.acquire(id, "t1");
      const existing = lease.existing(id);
      await expect(existing.guard(async () => undefined)).resolves.toBeUndefined();
      expect(await lease.revoke(id)).toBe((fence.epoch ?? 0) + 1);
      await expect(fence.guard(async () => undefined)).rejects.toMatchObject({ name: "StaleWriterError" });
      await expect(existing.guard(async () => undefined)).rejects.toMatchObject({ name: "StaleWriterError" });
      await expect(lease.acquire(id, "t2")).rejects.toMatchObject({ name: "ConflictError" });
    });

    it("returns undefined for a conversation that does not exist", async () => {
      expect(await leaseOn(new ManualClock()).revoke("no-such-conversation")).toBeUndefined();
    });
  });
});
