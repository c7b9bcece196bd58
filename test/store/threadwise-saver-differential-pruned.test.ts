import { DeltaValue, END, MemorySaver, START, StateGraph, StateSchema } from "@langchain/langgraph";
import { z } from "zod";
import { propertyRuns } from "../support/property-runs.js";
import { useTestDatabase } from "../support/store-fixture.js";
import { expectSameAnswersPruned, history, op, randomOps, side } from "./checkpoint/differential-support.js";
import { newSaver } from "./checkpoint/saver-support.js";

// Each test makes its checkpointer on a database of its own (`newSaver`); this one holds the client.
const test = useTestDatabase("differential_pruned", { clearBeforeEach: false });

/*
 * As threadwise-saver-differential.test.ts, on threads pruned as the product prunes them: each call
 * is a turn under a new fence epoch, followed by prune; every answer, and every checkpoint prune
 * kept, must read as MemorySaver's.
 */
describe("ThreadwiseSaver against MemorySaver, pruned after every call", () => {
  describe("named scenarios", () => {
    it("reads a DeltaChannel value, which LangGraph rebuilds from every earlier step's writes, as MemorySaver does", async () => {
      const saver = (await newSaver(test)).saver;
      const values = [];
      for (const checkpointer of [new MemorySaver(), saver]) {
        const State = new StateSchema({
          history: new DeltaValue(
            z.array(z.string()).default(() => []),
            { inputSchema: z.string(), reducer: (state: string[], writes: string[]) => [...state, ...writes] },
          ),
          question: z.string().optional(),
        });
        const graph = new StateGraph(State)
          .addNode("a", (s) => ({ history: `a:${s.question}` }))
          .addNode("b", (s) => ({ history: `b:${s.question}` }))
          .addEdge(START, "a")
          .addEdge("a", "b")
          .addEdge("b", END)
          .compile({ checkpointer });
        const thread = { configurable: { thread_id: "t1" } };
        for (const question of ["q1", "q2", "q3"]) {
          await graph.invoke({ question }, thread);
          if (checkpointer === saver) await saver.prune("t1", { keep: 1 });
        }
        values.push((await graph.getState(thread)).values);
      }
      expect(values[1]).toEqual(values[0]);
      expect(values[1].history).toEqual(["a:q1", "b:q1", "a:q2", "b:q2", "a:q3", "b:q3"]);
    });

    it("keeps every checkpoint of a DeltaChannel thread through fenced prunes, which examine only what is new", async () => {
      const saver = (await newSaver(test)).saver;
      const values = [];
      const counts = [];
      for (const checkpointer of [new MemorySaver(), saver]) {
        const State = new StateSchema({
          history: new DeltaValue(
            z.array(z.string()).default(() => []),
            { inputSchema: z.string(), reducer: (state: string[], writes: string[]) => [...state, ...writes] },
          ),
          question: z.string().optional(),
        });
        const graph = new StateGraph(State)
          .addNode("a", (s) => ({ history: `a:${s.question}` }))
          .addNode("b", (s) => ({ history: `b:${s.question}` }))
          .addEdge(START, "a")
          .addEdge("a", "b")
          .addEdge("b", END)
          .compile({ checkpointer });
        let epoch = 0;
        for (const question of ["q1", "q2", "q3", "q4", "q5"]) {
          epoch += 1;
          if (checkpointer === saver) await saver.claimThread("t1", epoch);
          await graph.invoke({ question }, { configurable: { thread_id: "t1", fence_epoch: epoch } });
          if (checkpointer === saver) await saver.prune("t1", { keep: 1, fenceEpoch: epoch });
        }
        const thread = { configurable: { thread_id: "t1" } };
        values.push((await graph.getState(thread)).values);
        let count = 0;
        for await (const _ of graph.getStateHistory(thread)) count += 1;
        counts.push(count);
      }
      expect(values[1]).toEqual(values[0]);
      expect(counts[1]).toBe(counts[0]);
    });

    it("runs a subgraph from the state updateState gave it before it started, as MemorySaver does", async () => {
      await expectSameAnswersPruned(test, [
        op(0, "invoke", { input: "bb" }),
        op(1, "update", { asNode: "review" }),
        op(2, "subUpdate"),
        op(3, "null"),
        op(4, "subState"),
      ]);
    });

    it("shows the subgraph state of a kept checkpoint whose step ran the subgraph, as MemorySaver does", async () => {
      const saver = (await newSaver(test)).saver;
      const states = [];
      for (const s of [side(new MemorySaver()), side(saver)]) {
        const thread = { configurable: { thread_id: "t1" } };
        await s.graph.invoke({ input: "bb" }, thread);
        const beforeSub = (await history(s.graph, thread)).find((snapshot) => snapshot.next.includes("sub"));
        // An update before the subgraph's step is a run start, which prune keeps; the subgraph runs under it.
        const update = await s.graph.updateState(beforeSub?.config ?? thread, { log: ["edited"] }, "review");
        await s.graph.invoke(null, update);
        if (s.saver === saver) await saver.prune("t1");
        states.push(
          (await s.graph.getState(update, { subgraphs: true })).tasks.map((task) => (task.state && "values" in task.state ? task.state.values : task.state)),
        );
      }
      expect(states[1]).toEqual(states[0]);
      expect(states[1]).toMatchObject([{ log: expect.arrayContaining(["edited", "s1:bb", "s2"]) }]);
    });
  });

  describe("random sequences of graph operations, each a turn under a new fence epoch", () => {
    const seeds = Array.from({ length: propertyRuns(3) }, (_, i) => 100 + i);
    it.each(seeds)(
      "returns what MemorySaver returns for the checkpoints prune keeps, seed %i",
      async (seed) => {
        await expectSameAnswersPruned(test, randomOps(seed, 30));
      },
      120_000,
    );
  });
});
