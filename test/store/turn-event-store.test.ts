import { describe, expect, it } from "vitest";
import type { TurnEvent } from "../../lib/events/turn-event-types.js";
import { COLLECTIONS } from "../../lib/store/collections.js";
import { DEFAULT_TURN_EVENTS_TTL_MS, TurnEventStore } from "../../lib/store/turn-event-store.js";
import { heldFence, lostFence } from "../support/fences.js";
import { useStoreFixture } from "../support/store-fixture.js";

const { stores, database } = useStoreFixture("turn_event_store", (db) => ({ events: new TurnEventStore(db) }));
const { events } = stores;

function progress(from: number, to: number): TurnEvent[] {
  return Array.from({ length: to - from + 1 }, (_, i) => ({ id: from + i, type: "progress", step: "model", modelCall: from + i }));
}

describe("TurnEventStore", () => {
  describe("append", () => {
    it("stores a batch once, expiring after the default time: a retried batch changes nothing", async () => {
      const now = new Date("2026-12-01T10:00:00Z");
      await events.append("t1", progress(1, 3), heldFence("c"), now);
      await events.append("t1", [{ id: 1, type: "text", modelCall: 0, delta: "retry" }], heldFence("c"), now);
      const batches = await database.db.collection(COLLECTIONS.turnEvents).find({ turnId: "t1" }).toArray();
      expect(batches).toHaveLength(1);
      expect(batches[0]).toMatchObject({ conversationId: "c", from: 1, to: 3, expiresAt: new Date(now.getTime() + DEFAULT_TURN_EVENTS_TTL_MS) });
      expect(await events.after("t1", 0)).toEqual(progress(1, 3));
    });

    it("leaves nothing when the fence is lost", async () => {
      await expect(events.append("t1", progress(1, 2), lostFence("c"))).rejects.toMatchObject({ name: "StaleWriterError" });
      expect(await events.lastId("t1")).toBe(0);
    });
  });

  describe("after", () => {
    it("returns the turn's events after the id, across batches and from the middle of one, in order", async () => {
      await events.append("t1", progress(4, 6), heldFence("c"));
      await events.append("t1", progress(1, 3), heldFence("c"));
      await events.append("t2", progress(1, 9), heldFence("c"));
      expect((await events.after("t1", 2)).map((e) => e.id)).toEqual([3, 4, 5, 6]);
      expect(await events.after("t1", 6)).toEqual([]);
    });
  });

  describe("lastId", () => {
    it("returns the id of the turn's last stored event, and 0 for a turn without any", async () => {
      await events.append("t1", progress(1, 3), heldFence("c"));
      await events.append("t1", progress(4, 5), heldFence("c"));
      expect(await events.lastId("t1")).toBe(5);
      expect(await events.lastId("t2")).toBe(0);
    });
  });

  describe("deleteByConversation", () => {
    it("deletes the conversation's batches and keeps the others'", async () => {
      await events.append("t1", progress(1, 2), heldFence("c"));
      await events.append("t2", progress(1, 2), heldFence("d"));
      await events.deleteByConversation("c");
      expect(await events.lastId("t1")).toBe(0);
      expect(await events.lastId("t2")).toBe(2);
    });
  });

  it("keeps batches for the ttl given", async () => {
    const short = new TurnEventStore(database.db, { ttlMs: 1000 });
    const now = new Date("2026-12-01T10:00:00Z");
    await short.append("t3", progress(1, 1), heldFence("c"), now);
    const batch = await database.db.collection(COLLECTIONS.turnEvents).findOne({ turnId: "t3" });
    expect(batch?.expiresAt).toEqual(new Date(now.getTime() + 1000));
  });
});
