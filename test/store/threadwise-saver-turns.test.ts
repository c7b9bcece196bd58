import { HumanMessage } from "@langchain/core/messages";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startConverseEndpoint, type ConverseEndpoint } from "../support/converse-endpoint.js";
import { useTestDatabase } from "../support/store-fixture.js";
import { newSaver } from "./checkpoint/saver-support.js";
import { MongoClient } from "mongodb";
import { ThreadwiseSaver } from "../../lib/store/threadwise-saver.js";
import { mongoUri } from "../support/mongo.js";
import { CommandCounter, runTurn, threadBytes, toolThenAnswer, turnGraph, withEndpoint } from "./checkpoint/turn-driver.js";

// Each test makes its checkpointer on a database of its own (`newSaver`); this one holds the client.
const test = useTestDatabase("turns", { clearBeforeEach: false });

let endpoint: ConverseEndpoint;
beforeAll(async () => {
  endpoint = await startConverseEndpoint({ respond: toolThenAnswer });
});
afterAll(() => endpoint.close());

/** Turns of the long thread (120 with SAVER_LONG_TURNS=120, as docs/storage.md reports); turns 16–25 are compared with the last ten. */
const LONG_TURNS = Number(process.env.SAVER_LONG_TURNS ?? "60");
const WINDOW = 10;
const maxOf = (rows: Cost[], key: keyof Cost) => Math.max(...rows.map((r) => r[key]));

interface Cost {
  getTupleRoundTrips: number;
  getTupleDocuments: number;
  getTupleBytes: number;
  turnRoundTrips: number;
  turnDocuments: number;
  turnBytes: number;
  pruneRoundTrips: number;
  pruneDocuments: number;
  pruneBytes: number;
  storedBytes: number;
  largest: number;
}

interface ListDocument {
  version: string;
  base?: string;
}

describe("ThreadwiseSaver under a LangGraph graph", () => {
  describe("put", () => {
    it("stores only the messages each turn appends: no list without a base after the first turn, bytes per turn flat", async () => {
      const { saver, db } = await newSaver(test);
      const graph = turnGraph(saver);
      const blobs = db.collection<ListDocument>("checkpoint_blobs");
      const growth: number[] = [];
      let before = 0;
      // Prune merges a turn's links into the version that ends it, which keeps its key.
      let known = new Set<string>();
      await withEndpoint(endpoint, async () => {
        for (let turn = 1; turn <= 12; turn += 1) {
          await runTurn(saver, graph, "t", turn);
          const { total } = await threadBytes(db, "t");
          growth.push(total - before);
          before = total;
          const links = await blobs.find({ thread_id: "t", type: "list" }).toArray();
          const newWithoutBase = links.filter((d) => d.base === undefined && !known.has(d.version)).map((d) => d.version);
          if (turn > 1) expect({ turn, newWithoutBase }).toEqual({ turn, newWithoutBase: [] });
          known = new Set(links.map((d) => d.version));
        }
      });
      const early = Math.max(...growth.slice(1, 4));
      const late = Math.max(...growth.slice(-3));
      expect(late).toBeLessThan(early * 1.2);
    }, 120_000);
  });

  describe("a long thread with a bounded working set", () => {
    const title = `keeps round trips, documents and bytes read per getTuple, turn and prune flat from turn 20 to turn ${LONG_TURNS}`;
    it(`${title}, every document under 256 KB`, async () => {
      // A client of its own, with command monitoring, so that only this thread's commands are counted.
      const client = new MongoClient(mongoUri(), { monitorCommands: true });
      await client.connect();
      const dbName = `${test.dbName}_long`;
      const saver = new ThreadwiseSaver({ client, dbName });
      expect(await saver.setup()).toEqual([]);
      const db = client.db(dbName);
      const counter = new CommandCounter(client);
      // 20 KB tool outputs; the oldest turns leave the `messages` channel as a bounded working set leaves them.
      const graph = turnGraph(saver, { toolOutput: 20_000, window: { keep: 24, every: 12 } });
      const costs: Cost[] = [];
      try {
        await withEndpoint(endpoint, async () => {
          for (let turn = 1; turn <= LONG_TURNS; turn += 1) {
            await saver.claimThread("long", turn);
            const config = { configurable: { thread_id: "long", fence_epoch: turn } };
            const run = await counter.measure(() => graph.invoke({ messages: [new HumanMessage(`Question ${turn}`)] }, config));
            const pruned = await counter.measure(() => saver.prune("long", { fenceEpoch: turn }));
            const read = await counter.measure(() => saver.getTuple({ configurable: { thread_id: "long" } }));
            // Measured where compared only: reading the whole thread every turn would make the test quadratic.
            const measured = (turn > 20 - WINDOW / 2 && turn <= 20 + WINDOW / 2) || turn > LONG_TURNS - WINDOW;
            const { total, largest } = measured ? await threadBytes(db, "long") : { total: 0, largest: 0 };
            costs.push({
              getTupleRoundTrips: read.roundTrips,
              getTupleDocuments: read.documents,
              getTupleBytes: read.replyBytes,
              turnRoundTrips: run.roundTrips,
              turnDocuments: run.documents,
              turnBytes: run.replyBytes,
              pruneRoundTrips: pruned.roundTrips,
              pruneDocuments: pruned.documents,
              pruneBytes: pruned.replyBytes,
              storedBytes: total,
              largest,
            });
          }
        });
      } finally {
        counter.close();
        await db.collection("checkpoint_blobs").deleteMany({});
        await Promise.all(["checkpoints", "checkpoint_writes", "checkpoint_threads"].map((name) => db.collection(name).deleteMany({})));
        await client.close();
      }
      const early = costs.slice(20 - WINDOW / 2, 20 + WINDOW / 2);
      const late = costs.slice(-WINDOW);
      for (const key of ["getTupleRoundTrips", "turnRoundTrips", "pruneRoundTrips"] as const) {
        expect(maxOf(late, key), key).toBeLessThanOrEqual(maxOf(early, key) + 1);
      }
      for (const key of ["getTupleDocuments", "getTupleBytes", "turnDocuments", "turnBytes", "pruneDocuments", "pruneBytes"] as const) {
        expect(maxOf(late, key), key).toBeLessThanOrEqual(maxOf(early, key) * 1.5);
      }
      // Stored bytes grow by the same amount per turn: the run starts every turn keeps.
      const growth = (rows: Cost[]) => (rows[rows.length - 1].storedBytes - rows[0].storedBytes) / (rows.length - 1);
      expect(growth(late)).toBeLessThan(growth(early) * 1.25);
      expect(Math.max(...costs.map((c) => c.largest))).toBeLessThan(256 * 1024);
      expect(late.at(-1)?.storedBytes).toBeGreaterThan(0);
      if (process.env.SAVER_COSTS) {
        const keys = Object.keys(costs[0]) as (keyof Cost)[];
        const maxima = (rows: Cost[]) => Object.fromEntries(keys.map((key) => [key, maxOf(rows, key)]));
        console.table({ "turns 16-25": maxima(early), [`turns ${LONG_TURNS - WINDOW + 1}-${LONG_TURNS}`]: maxima(late) });
      }
    }, 300_000);
  });
});
