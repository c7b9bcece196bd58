import { MemorySaver } from "@langchain/langgraph";
import { CheckpointNotFoundError, StaleWriterError } from "../../lib/errors.js";
import { propertyRuns } from "../support/property-runs.js";
import { useTestDatabase } from "../support/store-fixture.js";
import { both, describeOp, expectSameAnswers, expectSameThreads, history, op, outcome, randomOps, runOp, side } from "./checkpoint/differential-support.js";
import { newSaver } from "./checkpoint/saver-support.js";

// Each test makes its checkpointer on a database of its own (`newSaver`); this one holds the client.
const test = useTestDatabase("differential", { clearBeforeEach: false });

describe("ThreadwiseSaver against MemorySaver, through LangGraph's API", () => {
  describe("named scenarios", () => {
    it("keeps every channel value of a checkpoint that updateState copies (asNode __copy__), and runs on from the copy", async () => {
      await expectSameAnswers(test, [op(0, "invoke", { input: "a" }), op(1, "update", { asNode: "__copy__" }), op(2, "state"), op(3, "null"), op(4, "invoke")]);
    });

    it("resumes one of two interrupts raised in one step, keeping the other pending, then the other", async () => {
      await expectSameAnswers(test, [op(0, "invoke", { input: "i%" }), op(1, "resumeOne"), op(2, "state"), op(3, "resumeOne"), op(4, "state")]);
    });

    it("re-runs only the Send task that failed, keeping the writes of the tasks that succeeded", async () => {
      const { ours } = await expectSameAnswers(test, [op(0, "invoke", { input: "e#" }), op(1, "state"), op(2, "null")]);
      const { values } = await ours.graph.getState({ configurable: { thread_id: "t1" } });
      // The step before `review`: each task's write once, the failed worker's from its second run.
      expect(values.log.slice(0, values.log.indexOf("review")).sort()).toEqual(["left", "plan:e#", "right", "w0", "w1"]);
    });

    it("resumes a subgraph interrupted in its own namespace, and a Send task interrupted beside it", async () => {
      await expectSameAnswers(test, [
        op(0, "invoke", { input: "dd!" }),
        op(1, "state", { r2: 0 }),
        op(2, "resume"),
        op(3, "invoke", { input: "m&?" }),
        op(4, "resume"),
        op(5, "resume"),
      ]);
    });

    it("forks from an older checkpoint with input, with updateState, and with a replay, keeping the original branch in history", async () => {
      await expectSameAnswers(test, [
        op(0, "invoke", { input: "bb" }),
        op(1, "invoke", { input: "k~" }),
        op(2, "fork", { input: "ll~%", r1: 0.5, r2: 0.9 }),
        op(3, "update", { asNode: "left", r1: 0.7, r2: 0.9 }),
        op(4, "fork", { r1: 0.3, r2: 0.1 }),
        op(5, "history", { r1: 0.55, r2: 0.1 }),
      ]);
    });

    it("deletes one thread and leaves the other as it was", async () => {
      await expectSameAnswers(test, [
        op(0, "invoke", { input: "bb" }),
        op(1, "invoke", { thread: "t2", input: "c?" }),
        op(2, "delete"),
        op(3, "state"),
        op(4, "resume", { thread: "t2" }),
      ]);
    });
  });

  describe("where it deliberately differs (README, Checkpoint storage)", () => {
    it("throws CheckpointNotFoundError, writing nothing, where MemorySaver starts afresh from a checkpoint id never written", async () => {
      const { memory, ours } = await expectSameAnswers(test, [op(0, "invoke", { input: "bb" })]);
      const before = await outcome(ours, () => history(ours.graph, { configurable: { thread_id: "t1" } }));
      const unknown = { configurable: { thread_id: "t1", checkpoint_id: "1ef00000-0000-6000-8000-000000000000" } };
      await expect(memory.graph.invoke({ input: "a" }, unknown)).resolves.toMatchObject({ input: "a" });
      await expect(ours.graph.invoke({ input: "a" }, unknown)).rejects.toThrow(CheckpointNotFoundError);
      expect(await outcome(ours, () => history(ours.graph, { configurable: { thread_id: "t1" } }))).toEqual(before);
    });

    it("throws StaleWriterError for a writer fenced out mid-thread, leaving the thread as MemorySaver has it without that call", async () => {
      const memory = side(new MemorySaver());
      const saver = (await newSaver(test)).saver;
      const ours = side(saver, { fence_epoch: 1 });
      await saver.claimThread("t1", 1);
      for (const next of [op(0, "invoke", { input: "c?" }), op(1, "update", { asNode: "plan" })]) {
        const answers = await both(memory, ours, next);
        expect(answers.ours, describeOp(next)).toEqual(answers.memory);
      }
      await saver.claimThread("t1", 2);
      for (const refused of [op(2, "resume"), op(3, "update", { asNode: "left" }), op(4, "fork", { r1: 0.5 })]) {
        await expect(runOp(ours, refused, async () => (await history(ours.graph, { configurable: { thread_id: "t1" } }))[1].config)).rejects.toThrow(
          StaleWriterError,
        );
      }
      await expectSameThreads(memory, ours, "after the refused calls");
    });
  });

  describe("random sequences of graph operations", () => {
    const seeds = Array.from({ length: propertyRuns(6) }, (_, i) => i + 1);
    it.each(seeds)("returns what MemorySaver returns for every call, seed %i", async (seed) => {
      const memory = side(new MemorySaver());
      const ours = side((await newSaver(test)).saver);
      for (const op of randomOps(seed, 40)) {
        const answers = await both(memory, ours, op);
        expect(answers.ours, describeOp(op)).toEqual(answers.memory);
      }
      await expectSameThreads(memory, ours, "at the end");
    });
  });
});
