import { describe, expect, it } from "vitest";
import type { TurnEvent } from "../../lib/events/turn-event-types.js";
import { TurnEventHub } from "../../lib/events/turn-event-hub.js";
import { TurnEventRecorder } from "../../lib/events/turn-event-recorder.js";
import { StaleWriterError } from "../../lib/errors.js";
import { COLLECTIONS } from "../../lib/store/collections.js";
import { TurnEventStore, type TurnEventBatch } from "../../lib/store/turn-event-store.js";
import { heldFence, lostFence } from "../support/fences.js";
import { useStoreFixture } from "../support/store-fixture.js";

const { database, stores } = useStoreFixture("recorder", (db) => ({ store: new TurnEventStore(db) }));
const { store } = stores;

const usage = { inputTokens: 10, outputTokens: 2, totalTokens: 12 };

/** The stored batches of a turn, as (from, to, event types), in order. */
async function batches(turnId: string): Promise<{ from: number; to: number; types: string[] }[]> {
  const docs = await database.db.collection<TurnEventBatch>(COLLECTIONS.turnEvents).find({ turnId }).sort({ from: 1 }).toArray();
  return docs.map((b) => ({ from: b.from, to: b.to, types: b.events.map((e) => e.type) }));
}

describe("TurnEventRecorder", () => {
  describe("open", () => {
    it("returns a recorder whose first id follows the turn's last stored event when the store is ahead of the hub", async () => {
      await store.append("t1", [{ type: "progress", step: "model", modelCall: 0, id: 7 }], heldFence("c1"));
      const hub = new TurnEventHub();
      hub.publish("t1", { type: "progress", step: "model", modelCall: 0, id: 3 });
      const recorder = await TurnEventRecorder.open({ hub, store, turnId: "t1", fence: heldFence("c1") });
      recorder.text(0, "hi");
      expect(hub.lastId("t1")).toBe(8);
    });

    it("returns a recorder whose first id follows the hub's last event when the hub is ahead of the store", async () => {
      await store.append("t1", [{ type: "progress", step: "model", modelCall: 0, id: 2 }], heldFence("c1"));
      const hub = new TurnEventHub();
      hub.publish("t1", { type: "text", modelCall: 0, delta: "x", id: 5 });
      const recorder = await TurnEventRecorder.open({ hub, store, turnId: "t1", fence: heldFence("c1") });
      recorder.text(0, "hi");
      expect(hub.lastId("t1")).toBe(6);
    });

    it("returns a recorder starting at id 1 for a turn with no events anywhere", async () => {
      const hub = new TurnEventHub();
      const recorder = await TurnEventRecorder.open({ hub, store, turnId: "t1", fence: heldFence("c1") });
      recorder.text(0, "hi");
      expect(hub.after("t1", 0)).toEqual([{ type: "text", modelCall: 0, delta: "hi", id: 1 }]);
    });
  });

  describe("text", () => {
    it("publishes each non-empty delta at once with the next id, to the hub and the listener, and stores nothing yet", async () => {
      const hub = new TurnEventHub();
      const heard: TurnEvent[] = [];
      const recorder = await TurnEventRecorder.open({ hub, store, turnId: "t1", fence: heldFence("c1"), listener: (e) => heard.push(e) });
      recorder.text(0, "Hel");
      recorder.text(0, "");
      recorder.text(1, "lo");
      const expected = [
        { type: "text", modelCall: 0, delta: "Hel", id: 1 },
        { type: "text", modelCall: 1, delta: "lo", id: 2 },
      ];
      expect(hub.after("t1", 0)).toEqual(expected);
      expect(heard).toEqual(expected);
      expect(await batches("t1")).toEqual([]);
    });
  });

  describe("emit", () => {
    it("stores the step event with the text before it in one batch, and the next step's events in the next", async () => {
      const hub = new TurnEventHub();
      const recorder = await TurnEventRecorder.open({ hub, store, turnId: "t1", fence: heldFence("c1") });
      await recorder.emit({ type: "progress", step: "model", modelCall: 0 });
      recorder.text(0, "a");
      recorder.text(0, "b");
      await recorder.emit({ type: "tool_started", tool: "look_up", toolCallId: "call-1" });
      await recorder.emit({ type: "tool_finished", tool: "look_up", toolCallId: "call-1", status: "success" });
      expect(await batches("t1")).toEqual([
        { from: 1, to: 1, types: ["progress"] },
        { from: 2, to: 4, types: ["text", "text", "tool_started"] },
        { from: 5, to: 5, types: ["tool_finished"] },
      ]);
      expect(await store.after("t1", 0)).toEqual(hub.after("t1", 0));
    });

    it("throws StaleWriterError under a lost fence, after publishing the event, and keeps nothing stored", async () => {
      const hub = new TurnEventHub();
      const recorder = await TurnEventRecorder.open({ hub, store, turnId: "t1", fence: lostFence("c1") });
      recorder.text(0, "a");
      await expect(recorder.emit({ type: "progress", step: "model", modelCall: 1 })).rejects.toBeInstanceOf(StaleWriterError);
      expect(hub.after("t1", 0).map((e) => e.type)).toEqual(["text", "progress"]);
      expect(await batches("t1")).toEqual([]);
    });
  });

  describe("finish", () => {
    it("publishes and stores the final event with the text before it under the fence it is given, not the attempt's", async () => {
      const hub = new TurnEventHub();
      const heard: TurnEvent[] = [];
      const recorder = await TurnEventRecorder.open({ hub, store, turnId: "t1", fence: lostFence("c1"), listener: (e) => heard.push(e) });
      recorder.text(0, "done.");
      await recorder.finish({ type: "done", answer: "done.", usage }, heldFence("c1"));
      const events = [
        { type: "text", modelCall: 0, delta: "done.", id: 1 },
        { type: "done", answer: "done.", usage, id: 2 },
      ];
      expect(await store.after("t1", 0)).toEqual(events);
      expect(hub.after("t1", 0)).toEqual(events);
      expect(heard).toEqual(events);
      expect(await batches("t1")).toEqual([{ from: 1, to: 2, types: ["text", "done"] }]);
    });
  });
});
