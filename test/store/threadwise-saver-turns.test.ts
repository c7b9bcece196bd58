import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startConverseEndpoint, type ConverseEndpoint } from "../support/converse-endpoint.js";
import { useTestDatabase } from "../support/store-fixture.js";
import { newSaver } from "./checkpoint/saver-support.js";
import { runTurn, threadBytes, toolThenAnswer, turnGraph, withEndpoint } from "./checkpoint/turn-driver.js";

// Each test makes its checkpointer on a database of its own (`newSaver`); this one holds the client.
const test = useTestDatabase("turns", { clearBeforeEach: false });

let endpoint: ConverseEndpoint;
beforeAll(async () => {
  endpoint = await startConverseEndpoint({ respond: toolThenAnswer });
});
afterAll(() => endpoint.close());

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
    });
  });
});
