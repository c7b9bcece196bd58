import { afterEach, describe, expect, it, vi } from "vitest";
import { TURN_SUPERSEDED_EVENT, type TurnEvent } from "../../lib/events/turn-event-types.js";
import { DEFAULT_FINAL_EVENT_GRACE_MS, TurnEventFollower, type TurnEventFollowerOptions } from "../../lib/events/turn-event-follower.js";
import { TurnEventHub } from "../../lib/events/turn-event-hub.js";
import { COLLECTIONS } from "../../lib/store/collections.js";
import { TurnEventStore } from "../../lib/store/turn-event-store.js";
import { TurnStore, type TurnDocument, type TurnStatus } from "../../lib/store/turn-store.js";
import { heldFence } from "../support/fences.js";
import { useStoreFixture } from "../support/store-fixture.js";

/** The real store, counting the reads of events (counted when asked, before the answer). */
class CountingEventStore extends TurnEventStore {
  reads = 0;
  override after(turnId: string, afterId: number) {
    this.reads++;
    return super.after(turnId, afterId);
  }
}

const { database, stores } = useStoreFixture("follower", (db) => ({ events: new CountingEventStore(db), turns: new TurnStore(db) }));

const usage = { inputTokens: 10, outputTokens: 2, totalTokens: 12 };
const LONG_AGO = new Date("2020-01-01T00:00:00Z");

/** Writes a turn record as the runner leaves it. */
async function record(turnId: string, status: TurnStatus, fields: Partial<TurnDocument> = {}): Promise<void> {
  const turn: TurnDocument = {
    _id: turnId,
    conversationId: "c1",
    status,
    createdAt: LONG_AGO,
    updatedAt: LONG_AGO,
    usage,
    toolCalls: 0,
    progress: { step: "model", modelCalls: 1, at: LONG_AGO },
    ...fields,
  };
  await database.db.collection<TurnDocument>(COLLECTIONS.turns).replaceOne({ _id: turnId }, turn, { upsert: true });
}

const text = (id: number, delta = `d${id}`): TurnEvent => ({ type: "text", modelCall: 0, delta, id });
const progress = (id: number): TurnEvent => ({ type: "progress", step: "model", modelCall: 0, id });

async function store(turnId: string, events: TurnEvent[]): Promise<void> {
  await stores.events.append(turnId, events, heldFence("c1"));
}

/** The turn store, counting reads, with a hook run at each read before the record is returned, and a wait for the n-th read. */
function watchedTurns(onRead: (read: number) => Promise<void> = async () => undefined) {
  let reads = 0;
  const waits: { n: number; resolve: () => void }[] = [];
  return {
    get reads() {
      return reads;
    },
    async get(turnId: string): Promise<TurnDocument | null> {
      const read = ++reads;
      const turn = await stores.turns.get(turnId);
      await onRead(read);
      for (const wait of waits.filter((w) => w.n <= read)) wait.resolve();
      return turn;
    },
    /** Resolves once the record was read `n` times. */
    readsReached(n: number): Promise<void> {
      return reads >= n ? Promise.resolve() : new Promise((resolve) => waits.push({ n, resolve }));
    },
  };
}

function follower(options: Partial<TurnEventFollowerOptions> = {}): TurnEventFollower {
  return new TurnEventFollower({ store: stores.events, turns: stores.turns, hub: new TurnEventHub(), pollMs: 5, finalGraceMs: 0, ...options });
}

async function collect(events: AsyncIterable<TurnEvent>): Promise<TurnEvent[]> {
  const seen: TurnEvent[] = [];
  for await (const event of events) seen.push(event);
  return seen;
}

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
  stores.events.reads = 0;
});

describe("TurnEventFollower", () => {
  describe("follow", () => {
    it("returns the stored events after the id and the stored final event, not one inferred from the record", async () => {
      await store("t1", [progress(1), text(2)]);
      await store("t1", [{ type: "done", answer: "stored answer", usage, id: 3 }]);
      await record("t1", "completed", { answer: "record answer" });
      expect(await collect(follower().follow("t1", 1, AbortSignal.timeout(10_000)))).toEqual([
        text(2),
        { type: "done", answer: "stored answer", usage, id: 3 },
      ]);
    });

    it("returns nothing to a client that already read the stored final event (a reconnect after done), rather than a second one", async () => {
      await store("t1", [progress(1), text(2), { type: "done", answer: "stored answer", usage, id: 3 }]);
      await record("t1", "completed", { answer: "stored answer" });
      expect(await collect(follower().follow("t1", 3, AbortSignal.timeout(10_000)))).toEqual([]);
    });

    it("returns the final event a finished record implies, with the next id, when none is stored past the grace", async () => {
      const cases: [Partial<TurnDocument> & { status: TurnStatus }, Record<string, unknown>][] = [
        [
          { status: "completed", answer: "the answer" },
          { type: "done", answer: "the answer", usage },
        ],
        [{ status: "completed" }, { type: "done", answer: "", usage }],
        [
          { status: "failed", error: { code: "model_unreachable", message: "it broke" } },
          { type: "failed", code: "model_unreachable", message: "it broke" },
        ],
        [{ status: "failed" }, { type: "failed", code: "internal_error", message: "the turn failed" }],
        [{ status: "superseded" }, { ...TURN_SUPERSEDED_EVENT }],
      ];
      for (const [i, [fields, final]] of cases.entries()) {
        const turnId = `t${i}`;
        await store(turnId, [progress(1), text(2)]);
        await record(turnId, fields.status, fields);
        expect(await collect(follower().follow(turnId, 0, AbortSignal.timeout(10_000))), fields.status).toEqual([progress(1), text(2), { ...final, id: 3 }]);
      }
    });

    it("returns nothing more, at once, to a client that already read a waiting turn's approval_requested (a reconnect), not after the time limit", async () => {
      const approvals = [{ approvalId: "a1", toolCallId: "tc1", tool: "create_follow_up", expiresAt: "2030-01-01T00:00:00.000Z" }];
      await store("t-waits", [progress(1), { type: "approval_requested", approvals, id: 2 }]);
      await record("t-waits", "awaiting_approval", { updatedAt: new Date() });
      const started = Date.now();
      expect(await collect(follower({ finalGraceMs: 60_000, followMaxMs: 30_000 }).follow("t-waits", 2, AbortSignal.timeout(10_000)))).toEqual([]);
      expect(Date.now() - started).toBeLessThan(1_000);
    });

    it("returns a waiting turn's stored events and ends once its pause is past the grace, whatever the client saw", async () => {
      await store("t-paused", [progress(1)]);
      await record("t-paused", "awaiting_approval");
      const signal = AbortSignal.timeout(10_000);
      expect(await collect(follower({ followMaxMs: 30_000 }).follow("t-paused", 0, signal))).toEqual([progress(1)]);
      expect(signal.aborted).toBe(false);
    });

    it("returns no final event for a turn that runs or is queued: it ends at its time limit", async () => {
      for (const status of ["running", "queued"] as const) {
        await record(`t-${status}`, status);
        await store(`t-${status}`, [progress(1)]);
        const signal = AbortSignal.timeout(10_000);
        expect(await collect(follower({ followMaxMs: 100 }).follow(`t-${status}`, 0, signal))).toEqual([progress(1)]);
        expect(signal.aborted).toBe(false);
      }
    });

    it("waits the default grace (5 s) after the record's last update before inferring the final event", async () => {
      vi.useFakeTimers({ toFake: ["Date"] });
      const now = Date.parse("2030-01-01T00:00:00Z");
      vi.setSystemTime(now);
      await record("t1", "completed", { answer: "a", updatedAt: new Date(now - DEFAULT_FINAL_EVENT_GRACE_MS) });
      expect(await collect(follower({ finalGraceMs: undefined }).follow("t1", 0, AbortSignal.timeout(10_000)))).toEqual([
        { type: "done", answer: "a", usage, id: 1 },
      ]);

      await record("t2", "completed", { answer: "b", updatedAt: new Date(now - DEFAULT_FINAL_EVENT_GRACE_MS + 1) });
      const turns = watchedTurns();
      const following = collect(follower({ finalGraceMs: undefined, turns }).follow("t2", 0, AbortSignal.timeout(10_000)));
      let ended = false;
      void following.then(() => (ended = true));
      await turns.readsReached(3);
      expect(ended).toBe(false);
      vi.setSystemTime(now + 1);
      expect(await following).toEqual([{ type: "done", answer: "b", usage, id: 1 }]);
    });

    it("returns the final event stored while the record was read past the grace, rather than infer one", async () => {
      await store("t1", [progress(1)]);
      await record("t1", "completed", { answer: "record answer" });
      const turns = watchedTurns(async (read) => {
        if (read === 1) await store("t1", [{ type: "done", answer: "stored answer", usage, id: 2 }]);
      });
      expect(await collect(follower({ turns }).follow("t1", 0, AbortSignal.timeout(10_000)))).toEqual([
        progress(1),
        { type: "done", answer: "stored answer", usage, id: 2 },
      ]);
    });

    it("waits for a turn without a record yet, and returns its events once it begins", async () => {
      const turns = watchedTurns(async (read) => {
        if (read === 3) {
          await store("t1", [progress(1), { type: "done", answer: "a", usage, id: 2 }]);
          await record("t1", "completed", { answer: "a" });
        }
      });
      expect(await collect(follower({ turns }).follow("t1", 0, AbortSignal.timeout(10_000)))).toEqual([
        progress(1),
        { type: "done", answer: "a", usage, id: 2 },
      ]);
      expect(turns.reads).toBeGreaterThanOrEqual(3);
    });

    it("ends, without a final event, when a turn it saw a record of is deleted", async () => {
      await record("t1", "running");
      await store("t1", [progress(1)]);
      const turns = watchedTurns(async (read) => {
        if (read === 2) await database.db.collection(COLLECTIONS.turns).deleteOne({ _id: "t1" } as never);
      });
      const signal = AbortSignal.timeout(10_000);
      expect(await collect(follower({ turns, followMaxMs: 60_000 }).follow("t1", 0, signal))).toEqual([progress(1)]);
      expect(signal.aborted).toBe(false);
    });

    it("ends at once when its signal is aborted, whether it is waiting or about to wait for the next poll", async () => {
      await record("t1", "running");
      for (const when of ["about to wait", "waiting"]) {
        const turns = watchedTurns();
        const abort = new AbortController();
        const limit = AbortSignal.timeout(10_000);
        const following = collect(follower({ turns, pollMs: 60_000, followMaxMs: 60_000 }).follow("t1", 0, AbortSignal.any([abort.signal, limit])));
        await turns.readsReached(1);
        if (when === "waiting") await new Promise((resolve) => setImmediate(resolve));
        abort.abort();
        expect(await following).toEqual([]);
        expect(limit.aborted, when).toBe(false);
      }
    });

    it("returns the live events of this process's hub as they are published, reading the store only while the hub is quiet", async () => {
      await record("t1", "running");
      const hub = new TurnEventHub();
      const turns = watchedTurns();
      const events = follower({ hub, turns, pollMs: 60_000 }).follow("t1", 0, AbortSignal.timeout(10_000));
      const first = events.next();
      await turns.readsReached(1);
      hub.publish("t1", progress(1));
      expect((await first).value).toEqual(progress(1));
      const second = events.next();
      await new Promise((resolve) => setImmediate(resolve));
      hub.publish("t1", text(2));
      hub.publish("t1", { type: "done", answer: "a", usage, id: 3 });
      expect((await second).value).toEqual(text(2));
      expect((await events.next()).value).toEqual({ type: "done", answer: "a", usage, id: 3 });
      expect((await events.next()).done).toBe(true);
      expect(stores.events.reads).toBe(1);
      expect(turns.reads).toBe(1);
    });

    it("sleeps the poll period it is given between reads, and clears that sleep when the hub wakes it", async () => {
      await record("t1", "running");
      const POLL_MS = 61_234;
      const setTimer = vi.spyOn(globalThis, "setTimeout");
      const clearTimer = vi.spyOn(globalThis, "clearTimeout");
      const hub = new TurnEventHub();
      const turns = watchedTurns();
      const events = follower({ hub, turns, pollMs: POLL_MS }).follow("t1", 0, AbortSignal.timeout(10_000));
      const first = events.next();
      await turns.readsReached(1);
      await new Promise((resolve) => setImmediate(resolve));
      const sleeps = setTimer.mock.calls.flatMap(([, ms], i) => (ms === POLL_MS ? [setTimer.mock.results[i].value] : []));
      expect(sleeps).toHaveLength(1);
      hub.publish("t1", { type: "done", answer: "a", usage, id: 1 });
      expect((await first).value).toMatchObject({ type: "done", id: 1 });
      expect(clearTimer).toHaveBeenCalledWith(sleeps[0]);
      await events.return(undefined);
    });

    it("returns the hub's events after the id without reading the store when the hub has them", async () => {
      const hub = new TurnEventHub();
      for (const event of [progress(1), text(2), { type: "done", answer: "a", usage, id: 3 } as TurnEvent]) hub.publish("t1", event);
      expect(await collect(follower({ hub }).follow("t1", 1, AbortSignal.timeout(10_000)))).toEqual([text(2), { type: "done", answer: "a", usage, id: 3 }]);
      expect(stores.events.reads).toBe(0);
    });
  });
});
