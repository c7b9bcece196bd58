import type { TurnEvent } from "../../lib/events/turn-event-types.js";
import { DEFAULT_LIVE_EVENTS_MAX_BYTES, DEFAULT_LIVE_TURNS_KEPT, eventBytes, TurnEventHub } from "../../lib/events/turn-event-hub.js";

const text = (id: number, delta = `d${id}`): TurnEvent => ({ type: "text", modelCall: 0, delta, id });

/** Whether the wait has resolved, read after the reactions already queued have run (one microtask). */
function watch(promise: Promise<void>): () => Promise<"woken" | "waiting"> {
  let woken = false;
  void promise.then(() => {
    woken = true;
  });
  return async () => {
    await Promise.resolve();
    return woken ? "woken" : "waiting";
  };
}

describe("TurnEventHub", () => {
  describe("after", () => {
    it("returns the turn's events after the id, in order", () => {
      const hub = new TurnEventHub();
      for (const id of [1, 2, 3, 4]) hub.publish("t1", text(id));
      expect(hub.after("t1", 0).map((e) => e.id)).toEqual([1, 2, 3, 4]);
      expect(hub.after("t1", 2).map((e) => e.id)).toEqual([3, 4]);
      expect(hub.after("t1", 4)).toEqual([]);
    });

    it("returns nothing for a turn it has no events of, and only the named turn's events", () => {
      const hub = new TurnEventHub();
      hub.publish("t1", text(1));
      hub.publish("t2", text(1, "other"));
      expect(hub.after("t3", 0)).toEqual([]);
      expect(hub.after("t2", 0)).toEqual([text(1, "other")]);
    });
  });

  describe("lastId", () => {
    it("returns the id of the turn's last event, and 0 for a turn without events", () => {
      const hub = new TurnEventHub();
      hub.publish("t1", text(1));
      hub.publish("t1", text(2));
      expect(hub.lastId("t1")).toBe(2);
      expect(hub.lastId("t2")).toBe(0);
    });
  });

  describe("publish", () => {
    it("keeps at most turnsKept turns, dropping the one first published", () => {
      const hub = new TurnEventHub({ turnsKept: 2 });
      hub.publish("t1", text(1));
      hub.publish("t2", text(1));
      hub.publish("t1", text(2));
      expect(hub.after("t1", 0)).toHaveLength(2);
      hub.publish("t3", text(1));
      expect([hub.lastId("t1"), hub.lastId("t2"), hub.lastId("t3")]).toEqual([0, 1, 1]);
    });

    it("keeps DEFAULT_LIVE_TURNS_KEPT turns by default", () => {
      const hub = new TurnEventHub();
      for (let i = 0; i <= DEFAULT_LIVE_TURNS_KEPT; i++) hub.publish(`t${i}`, text(1));
      expect(hub.lastId("t0")).toBe(0);
      expect(hub.lastId("t1")).toBe(1);
      expect(hub.lastId(`t${DEFAULT_LIVE_TURNS_KEPT}`)).toBe(1);
    });
  });

  describe("publish (bytes, issue 31)", () => {
    it("keeps many turns of many deltas under its byte budget, however many turns it keeps", () => {
      const maxBytes = 4 * 1024 * 1024;
      const hub = new TurnEventHub({ maxBytes });
      const delta = "x".repeat(40);
      let peak = 0;
      for (let turn = 0; turn < 64; turn++) {
        for (let id = 1; id <= 4_096; id++) hub.publish(`t${turn}`, text(id, delta));
        peak = Math.max(peak, hub.retainedBytes);
      }
      // 64 turns of 4,096 deltas are about 45 MB as kept; the budget holds.
      expect(64 * 4_096 * eventBytes(text(1, delta))).toBeGreaterThan(10 * maxBytes);
      expect(peak).toBeLessThanOrEqual(maxBytes);
      // The newest turn is whole; the oldest went first.
      expect(hub.after("t63", 0)).toHaveLength(4_096);
      expect(hub.after("t0", 0)).toEqual([]);
    });

    it("drops a turn larger than the whole budget, keeps none of its later events, and wakes nobody for them", async () => {
      const hub = new TurnEventHub({ maxBytes: 10_000 });
      hub.publish("small", text(1));
      for (let id = 1; id <= 200; id++) hub.publish("huge", text(id, "y".repeat(100)));
      expect(hub.after("huge", 0)).toEqual([]);
      expect(hub.lastId("huge")).toBe(0);
      // Older turns went first, to make room, before the huge one did.
      expect(hub.after("small", 0)).toEqual([]);
      // Its followers read the store after a quiet poll period, as for a turn of another process.
      const woken = watch(hub.next("huge").promise);
      hub.publish("huge", text(201));
      expect(await woken()).toBe("waiting");
      expect(hub.retainedBytes).toBeLessThanOrEqual(10_000);
    });

    it("has a budget of 64 MiB by default", () => {
      expect(DEFAULT_LIVE_EVENTS_MAX_BYTES).toBe(64 * 1024 * 1024);
    });
  });

  describe("next", () => {
    it("returns a wait that resolves at the turn's next event, not at another turn's", async () => {
      const hub = new TurnEventHub();
      const first = watch(hub.next("t1").promise);
      const second = watch(hub.next("t1").promise);
      hub.publish("t2", text(1));
      expect(await first()).toBe("waiting");
      hub.publish("t1", text(1));
      expect([await first(), await second()]).toEqual(["woken", "woken"]);
    });

    it("returns a wait for one event only: a wait begun after it waits for the next", async () => {
      const hub = new TurnEventHub();
      hub.next("t1");
      hub.publish("t1", text(1));
      const later = watch(hub.next("t1").promise);
      expect(await later()).toBe("waiting");
      hub.publish("t1", text(2));
      expect(await later()).toBe("woken");
    });

    it("returns a wait that a cancel forgets, leaving the turn's other waits", async () => {
      const hub = new TurnEventHub();
      const cancelled = hub.next("t1");
      const kept = watch(hub.next("t1").promise);
      const wasCancelled = watch(cancelled.promise);
      cancelled.cancel();
      hub.publish("t1", text(1));
      expect([await wasCancelled(), await kept()]).toEqual(["waiting", "woken"]);
    });
  });
});
