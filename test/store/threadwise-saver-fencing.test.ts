import { HumanMessage } from "@langchain/core/messages";
import { emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { CheckpointNotFoundError, StaleWriterError, ValidationError } from "../../lib/errors.js";
import { useTestDatabase } from "../support/store-fixture.js";
import {
  GatedSerializer,
  checkpointWith,
  countThreadDocuments,
  documents,
  gate,
  loopMetadata,
  newSaver,
  scriptedGraph,
  snapshotThread,
} from "./checkpoint/saver-support.js";

// Each test makes its checkpointer on a database of its own (`newSaver`); this one holds the client.
const test = useTestDatabase("fencing", { clearBeforeEach: false });

const fenced = (thread_id: string, fence_epoch: number, checkpoint_id?: string) => ({
  configurable: { thread_id, checkpoint_ns: "", fence_epoch, ...(checkpoint_id ? { checkpoint_id } : {}) },
});

describe("ThreadwiseSaver", () => {
  describe("claimThread", () => {
    it("creates the thread's fence, so a writer below it is refused", async () => {
      const { saver } = await newSaver(test);
      await saver.claimThread("t", 2);
      await expect(saver.put(fenced("t", 1), checkpointWith({ a: 1 }, { a: 1 }), loopMetadata, { a: 1 })).rejects.toThrow(StaleWriterError);
    });

    it("accepts the current epoch again and a higher one", async () => {
      const { saver } = await newSaver(test);
      await saver.claimThread("t", 2);
      await saver.claimThread("t", 2);
      await saver.claimThread("t", 5);
      await expect(saver.put(fenced("t", 5), checkpointWith({ a: 1 }, { a: 1 }), loopMetadata, { a: 1 })).resolves.toBeDefined();
    });

    it("throws StaleWriterError carrying the thread and both epochs when the fence is higher", async () => {
      const { saver } = await newSaver(test);
      await saver.claimThread("t", 7);
      const claim = saver.claimThread("t", 3);
      await expect(claim).rejects.toThrow(StaleWriterError);
      await expect(claim).rejects.toMatchObject({ threadId: "t", epoch: 3, currentEpoch: 7 });
    });

    it("throws ValidationError when the epoch is not a non-negative integer", async () => {
      const { saver } = await newSaver(test);
      await expect(saver.claimThread("t", 1.5)).rejects.toThrow(ValidationError);
      await expect(saver.claimThread("t", -1)).rejects.toThrow(ValidationError);
    });
  });

  describe("put", () => {
    it("throws ValidationError when fence_epoch is not a non-negative integer", async () => {
      const { saver } = await newSaver(test);
      const config = { configurable: { thread_id: "t", fence_epoch: "1" } };
      await expect(saver.put(config, checkpointWith({}, {}), loopMetadata, {})).rejects.toThrow(ValidationError);
    });

    it("throws StaleWriterError for a fenced writer of a thread that was never claimed, writing nothing", async () => {
      const { saver, db } = await newSaver(test);
      await expect(saver.put(fenced("t", 1), checkpointWith({ a: 1 }, { a: 1 }), loopMetadata, { a: 1 })).rejects.toThrow(StaleWriterError);
      expect(await countThreadDocuments(db, "t")).toBe(0);
    });

    it("leaves nothing visible of a write whose fence was raised while it was being written", async () => {
      const serde = new GatedSerializer();
      const { saver, db } = await newSaver(test, {}, serde);
      await saver.claimThread("t", 1);
      const first = await saver.put(fenced("t", 1), checkpointWith({ a: "kept" }, { a: 1 }), loopMetadata, { a: 1 });
      const release = gate();
      const reached = serde.arm("stale value", release.opened);
      const stale = saver.put(fenced("t", 1, first.configurable?.checkpoint_id), checkpointWith({ a: "stale value" }, { a: 2 }), loopMetadata, {
        a: 2,
      });
      await reached;
      await saver.claimThread("t", 2);
      release.open();
      await expect(stale).rejects.toThrow(StaleWriterError);
      const latest = await saver.getTuple({ configurable: { thread_id: "t" } });
      expect(latest?.checkpoint.id).toBe(first.configurable?.checkpoint_id);
      expect(latest?.checkpoint.channel_values).toEqual({ a: "kept" });
      expect((await documents(db, "checkpoints", "t")).length).toBe(1);
    });
  });

  describe("putWrites", () => {
    it("leaves nothing visible of writes whose fence was raised while they were being written", async () => {
      const serde = new GatedSerializer();
      const { saver, db } = await newSaver(test, {}, serde);
      await saver.claimThread("t", 1);
      const config = await saver.put(fenced("t", 1), checkpointWith({}, {}), loopMetadata, {});
      const release = gate();
      const reached = serde.arm("stale write", release.opened);
      const stale = saver.putWrites({ configurable: { ...config.configurable, fence_epoch: 1 } }, [["a", "stale write"]], "task");
      await reached;
      await saver.claimThread("t", 2);
      release.open();
      await expect(stale).rejects.toThrow(StaleWriterError);
      expect((await saver.getTuple(config))?.pendingWrites).toEqual([]);
      expect(await documents(db, "checkpoint_writes", "t")).toEqual([]);
    });

    it("keeps the latest epoch's write when writers of two epochs wrote the same task's write", async () => {
      const { saver } = await newSaver(test);
      await saver.claimThread("t", 1);
      const config = await saver.put(fenced("t", 1), checkpointWith({}, {}), loopMetadata, {});
      await saver.putWrites({ configurable: { ...config.configurable, fence_epoch: 1 } }, [["a", "first"]], "task");
      await saver.claimThread("t", 2);
      await saver.putWrites({ configurable: { ...config.configurable, fence_epoch: 2 } }, [["a", "second"]], "task");
      expect((await saver.getTuple(config))?.pendingWrites).toEqual([["task", "a", "second"]]);
    });
  });

  describe("deleteThread", () => {
    it("refuses a fenced writer still running, which leaves nothing of the thread behind", async () => {
      const { saver, db } = await newSaver(test);
      await saver.claimThread("t", 1);
      const first = await saver.put(fenced("t", 1), checkpointWith({ a: "x" }, { a: 1 }), loopMetadata, { a: 1 });
      await saver.deleteThread("t");
      const next = saver.put(fenced("t", 1, first.configurable?.checkpoint_id), checkpointWith({ a: "y" }, { a: 2 }), loopMetadata, { a: 2 });
      await expect(next).rejects.toSatisfy((e) => e instanceof StaleWriterError || e instanceof CheckpointNotFoundError);
      await expect(saver.putWrites({ configurable: { ...first.configurable, fence_epoch: 1 } }, [["a", "z"]], "task")).rejects.toThrow(StaleWriterError);
      expect(await countThreadDocuments(db, "t")).toBe(0);
    });

    it("lets a brand-new thread of the same id start", async () => {
      const { saver } = await newSaver(test);
      await saver.claimThread("t", 1);
      await saver.put(fenced("t", 1), checkpointWith({ a: "x" }, { a: 1 }), loopMetadata, { a: 1 });
      await saver.deleteThread("t");
      await saver.claimThread("t", 1);
      const fresh = await saver.put(fenced("t", 1), { ...emptyCheckpoint(), id: uuid6(-1) }, loopMetadata, {});
      expect((await saver.getTuple(fresh))?.checkpoint.id).toBe(fresh.configurable?.checkpoint_id);
    });
  });

  describe("prune", () => {
    it("compacts the commit marks of epochs below the fence, leaving every kept checkpoint as it read", async () => {
      const { saver, db } = await newSaver(test);
      const graph = scriptedGraph(saver);
      for (let epoch = 1; epoch <= 9; epoch += 1) {
        await saver.claimThread("t", epoch);
        await graph.invoke({ messages: [new HumanMessage(`q${epoch}`)] }, fenced("t", epoch));
        if (epoch < 9) await saver.prune("t", { fenceEpoch: epoch });
      }
      const before = await snapshotThread(saver, "t");
      expect(Object.keys((await documents(db, "checkpoint_threads", "t"))[0].marks)).toHaveLength(9);
      await saver.prune("t", { fenceEpoch: 9, keep: 100 });
      expect(Object.keys((await documents(db, "checkpoint_threads", "t"))[0].marks)).toEqual(["9"]);
      const tokens = await db.collection("checkpoints").countDocuments({ thread_id: "t", epoch: { $lt: 9 }, token: { $exists: true } });
      expect(tokens).toBe(0);
      expect(await snapshotThread(saver, "t")).toEqual(before);
    });
  });

  describe("with a compiled graph", () => {
    it("stops a stale run at its next write, leaving the new holder's chain linear and unchanged", async () => {
      const { saver } = await newSaver(test);
      const paused = gate();
      const resume = gate();
      let pauseOnce = true;
      const staleGraph = scriptedGraph(saver, {
        beforeAnswer: async () => {
          if (!pauseOnce) return;
          pauseOnce = false;
          paused.open();
          await resume.opened;
        },
      });
      const graph = scriptedGraph(saver);
      await saver.claimThread("t", 1);
      await graph.invoke({ messages: [new HumanMessage("q0")] }, fenced("t", 1));
      const staleRun = staleGraph.invoke({ messages: [new HumanMessage("q1 (stale)")] }, { ...fenced("t", 1), durability: "sync" });
      await paused.opened;
      // The lease expired under the paused run: a new holder claims the thread and runs a turn.
      await saver.claimThread("t", 2);
      await graph.invoke({ messages: [new HumanMessage("q2")] }, fenced("t", 2));
      const before = await snapshotThread(saver, "t");
      resume.open();
      await expect(staleRun).rejects.toThrow(StaleWriterError);
      expect(await snapshotThread(saver, "t")).toEqual(before);
      const history = [];
      for await (const tuple of saver.list({ configurable: { thread_id: "t", checkpoint_ns: "" } })) history.push(tuple);
      for (let i = 0; i < history.length - 1; i += 1) {
        expect(history[i].parentConfig?.configurable?.checkpoint_id).toBe(history[i + 1].checkpoint.id);
      }
      const state = await graph.getState({ configurable: { thread_id: "t" } });
      const answers = (state.values.messages as HumanMessage[]).map((m) => m.content).filter((c) => String(c).startsWith("answer"));
      expect(answers).toEqual(["answer to q0", "answer to q2"]);
    });
  });
});
