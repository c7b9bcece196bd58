import { HumanMessage, type BaseMessage } from "@langchain/core/messages";
import type { CheckpointTuple } from "@langchain/langgraph-checkpoint";
import { CheckpointNotFoundError } from "../../lib/errors.js";
import { useTestDatabase } from "../support/store-fixture.js";
import { newSaver, scriptedGraph, snapshotThread } from "./checkpoint/saver-support.js";

// Each test makes its checkpointer on a database of its own (`newSaver`); this one holds the client.
const test = useTestDatabase("branches", { clearBeforeEach: false });

const thread = { configurable: { thread_id: "t" } };
const texts = (messages: BaseMessage[]) => messages.map((m) => String(m.content));

/** The root checkpoints of the thread, newest first. */
async function history(saver: Parameters<typeof scriptedGraph>[0]): Promise<CheckpointTuple[]> {
  const tuples: CheckpointTuple[] = [];
  for await (const tuple of saver.list({ configurable: { thread_id: "t", checkpoint_ns: "" } })) tuples.push(tuple);
  return tuples;
}

describe("ThreadwiseSaver", () => {
  describe("getNextVersion", () => {
    it("returns a version above the current one, and a different one each time", async () => {
      const { saver } = await newSaver(test);
      const versions = Array.from({ length: 50 }, () => saver.getNextVersion(4));
      for (const version of versions) {
        expect(version).toBeGreaterThan(5);
        expect(version).toBeLessThan(6);
      }
      expect(new Set(versions).size).toBe(versions.length);
      expect(saver.getNextVersion(undefined)).toBeGreaterThan(1);
      expect(saver.getNextVersion(versions[0])).toBeGreaterThan(6);
    });
  });

  describe("with a compiled graph", () => {
    it("leaves every checkpoint of the original branch byte-identical when a run forks from an older checkpoint", async () => {
      const { saver } = await newSaver(test);
      const graph = scriptedGraph(saver);
      for (const question of ["q1", "q2", "q3"]) await graph.invoke({ messages: [new HumanMessage(question)] }, thread);
      const before = await snapshotThread(saver, "t");
      // The end of turn 1: fork there with another second question.
      const endOfTurn1 = (await history(saver)).find((t) => texts(t.checkpoint.channel_values.messages as BaseMessage[]).at(-1) === "answer to q1");
      const forked = await graph.invoke({ messages: [new HumanMessage("q2 edited")] }, endOfTurn1?.config);
      expect(texts(forked.messages).filter((t) => t.startsWith("answer"))).toEqual(["answer to q1", "answer to q2 edited"]);
      const after = await snapshotThread(saver, "t");
      for (const [id, bytes] of before) expect(after.get(id), id).toBe(bytes);
    });

    it("leaves every checkpoint of the original branch byte-identical when updateState writes on an older checkpoint", async () => {
      const { saver } = await newSaver(test);
      const graph = scriptedGraph(saver);
      for (const question of ["q1", "q2"]) await graph.invoke({ messages: [new HumanMessage(question)] }, thread);
      const before = await snapshotThread(saver, "t");
      const older = (await history(saver)).at(-3);
      const updated = await graph.updateState(older?.config ?? thread, { messages: [new HumanMessage("inserted")] });
      await graph.invoke(null, updated);
      const after = await snapshotThread(saver, "t");
      for (const [id, bytes] of before) expect(after.get(id), id).toBe(bytes);
    });

    it("throws CheckpointNotFoundError, writing nothing, when a run starts from a checkpoint that no longer exists", async () => {
      const { saver } = await newSaver(test);
      const graph = scriptedGraph(saver);
      await graph.invoke({ messages: [new HumanMessage("q1")] }, thread);
      await graph.invoke({ messages: [new HumanMessage("q2")] }, thread);
      const pruned = (await history(saver)).at(-2);
      await saver.prune("t", { keep: 1 });
      expect(await saver.getTuple(pruned?.config ?? thread)).toBeUndefined();
      const before = await snapshotThread(saver, "t");
      await expect(graph.invoke({ messages: [new HumanMessage("q3")] }, pruned?.config)).rejects.toThrow(CheckpointNotFoundError);
      expect(await snapshotThread(saver, "t")).toEqual(before);
      const state = await graph.getState(thread);
      expect(texts(state.values.messages).filter((t) => t.startsWith("answer"))).toEqual(["answer to q1", "answer to q2"]);
    });

    it("throws CheckpointNotFoundError when a run starts from a checkpoint id that was never written", async () => {
      const { saver } = await newSaver(test);
      const graph = scriptedGraph(saver);
      await graph.invoke({ messages: [new HumanMessage("q1")] }, thread);
      const config = { configurable: { thread_id: "t", checkpoint_id: "1ef00000-0000-6000-8000-000000000000" } };
      await expect(graph.invoke({ messages: [new HumanMessage("q2")] }, config)).rejects.toThrow(CheckpointNotFoundError);
    });
  });
});
