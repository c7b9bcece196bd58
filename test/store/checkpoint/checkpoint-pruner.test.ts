import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { Command, END, MessagesAnnotation, START, StateGraph, interrupt } from "@langchain/langgraph";
import type { CheckpointTuple } from "@langchain/langgraph-checkpoint";
import { BSON, type Db, type Document } from "mongodb";
import { StaleWriterError, ValidationError } from "../../../lib/errors.js";
import type { ThreadwiseSaver } from "../../../lib/store/threadwise-saver.js";
import { useTestDatabase } from "../../support/store-fixture.js";
import {
  GatedSerializer,
  SAVER_COLLECTIONS,
  checkpointWith,
  documents,
  gate,
  loopMetadata as metadata,
  newSaver as newSaverIn,
  scriptedGraph,
  snapshotThread,
} from "./saver-support.js";

// Each test makes its checkpointer on a database of its own (`newSaver`); this one holds the client.
const test = useTestDatabase("pruner", { clearBeforeEach: false });

const newSaver = (options: Parameters<typeof newSaverIn>[1] = {}) => newSaverIn(test, options);
const thread = (thread_id = "t") => ({ configurable: { thread_id } });
const texts = (messages: BaseMessage[]) => messages.map((m) => String(m.content));

async function runTurns(saver: ThreadwiseSaver, threadId: string, turns: number, prune: boolean, first = 0) {
  const graph = scriptedGraph(saver);
  let state: { messages: BaseMessage[] } = { messages: [] };
  for (let turn = first; turn < first + turns; turn += 1) {
    state = await graph.invoke({ messages: [new HumanMessage(`q${turn}`)] }, thread(threadId));
    if (prune) await saver.prune(threadId);
  }
  return state;
}

async function rootHistory(saver: ThreadwiseSaver, threadId = "t"): Promise<CheckpointTuple[]> {
  const tuples: CheckpointTuple[] = [];
  for await (const tuple of saver.list({ configurable: { thread_id: threadId, checkpoint_ns: "" } })) tuples.push(tuple);
  return tuples;
}

async function storedBytes(db: Db, threadId: string): Promise<number> {
  let bytes = 0;
  for (const name of SAVER_COLLECTIONS) for (const doc of await documents(db, name, threadId)) bytes += BSON.calculateObjectSize(doc);
  return bytes;
}

/** A parent graph whose `research` node is a compiled subgraph (its own checkpoint namespace); it may pause for approval. */
function graphWithSubgraph(saver: ThreadwiseSaver, options: { approval?: boolean } = {}) {
  const research = new StateGraph(MessagesAnnotation)
    .addNode("search", () => ({ messages: [new AIMessage("found")] }))
    .addNode("summarize", () => {
      const approved = options.approval ? interrupt("approve?") : "yes";
      return { messages: [new AIMessage(`summary (${String(approved)})`)] };
    })
    .addEdge(START, "search")
    .addEdge("search", "summarize")
    .addEdge("summarize", END)
    .compile();
  return new StateGraph(MessagesAnnotation)
    .addNode("research", research)
    .addNode("answer", () => ({ messages: [new AIMessage("answer")] }))
    .addEdge(START, "research")
    .addEdge("research", "answer")
    .addEdge("answer", END)
    .compile({ checkpointer: saver });
}

describe("CheckpointPruner", () => {
  describe("prune (through ThreadwiseSaver.prune)", () => {
    it("leaves, examining only what was inserted since the prune before the last, what a prune of the whole thread leaves", async () => {
      const { saver, db } = await newSaver();
      const graph = scriptedGraph(saver);
      for (let turn = 1; turn <= 6; turn += 1) {
        await saver.claimThread("t", turn);
        const config = { configurable: { thread_id: "t", fence_epoch: turn } };
        await graph.invoke({ messages: [new HumanMessage(`q${turn}`)] }, config);
        // A fork from the latest turn start every other turn: branches and tips, as edits leave them.
        if (turn % 2 === 0) {
          const start = (await rootHistory(saver)).find((t) => t.metadata?.source === "input") as CheckpointTuple;
          await graph.invoke({ messages: [new HumanMessage(`edit ${turn}`)] }, { configurable: { ...start.config.configurable, fence_epoch: turn } });
        }
        await saver.prune("t", { fenceEpoch: turn });
      }
      expect((await db.collection("checkpoint_threads").findOne({ _id: "t" as never }))?.prune?.since).toBeDefined();
      const incremental = await snapshotThread(saver, "t");
      const blobs = await db.collection("checkpoint_blobs").countDocuments({ thread_id: "t" });
      expect(await saver.prune("t", { fenceEpoch: 6, full: true })).toMatchObject({ checkpoints: 0, writes: 0 });
      expect(await snapshotThread(saver, "t")).toEqual(incremental);
      expect(await db.collection("checkpoint_blobs").countDocuments({ thread_id: "t" })).toBe(blobs);
    });

    it("keeps every turn's first checkpoint, from which the turn can be read, replayed or edited", async () => {
      const { saver } = await newSaver();
      await runTurns(saver, "t", 4, true);
      const starts = (await rootHistory(saver)).filter((t) => t.metadata?.source === "input");
      const input = (t: CheckpointTuple) => (t.checkpoint.channel_values.__start__ as { messages: BaseMessage[] }).messages[0].content;
      expect(starts.map(input)).toEqual(["q3", "q2", "q1", "q0"]);
      const graph = scriptedGraph(saver);
      const q1 = starts.find((t) => input(t) === "q1") as CheckpointTuple;
      // It holds the state the turn started from: the end of the turn before.
      expect(texts((await graph.getState(q1.config)).values.messages).at(-1)).toBe("answer to q0");
      // Replayed: the same question answered again on that state.
      const replayed = await graph.invoke(null, q1.config);
      expect(texts(replayed.messages).filter((t) => t.startsWith("answer"))).toEqual(["answer to q0", "answer to q1"]);
      // Edited: another question on that state.
      const edited = await graph.invoke({ messages: [new HumanMessage("q1 edited")] }, q1.config);
      expect(texts(edited.messages).filter((t) => t.startsWith("q"))).toEqual(["q0", "q1 edited"]);
      expect(texts(edited.messages).filter((t) => t.startsWith("answer"))).toEqual(["answer to q0", "answer to q1 edited"]);
    });

    it("removes the checkpoints inside finished turns, with their writes", async () => {
      const { saver, db } = await newSaver();
      await runTurns(saver, "t", 3, false);
      const result = await saver.prune("t", { keep: 1 });
      const remaining = await rootHistory(saver);
      // Every turn's start, and the latest.
      expect(remaining.map((t) => t.metadata?.source)).toEqual(["loop", "input", "input", "input"]);
      expect(result.checkpoints).toBe(15 - 4);
      const kept = new Set(remaining.map((t) => t.checkpoint.id));
      for (const write of await documents(db, "checkpoint_writes", "t")) expect(kept.has(write.checkpoint_id)).toBe(true);
    });

    it("keeps a branch's tip when a run forked from an older turn", async () => {
      const { saver } = await newSaver();
      const graph = scriptedGraph(saver);
      await runTurns(saver, "t", 2, false);
      const tip = (await rootHistory(saver))[0];
      const start = (await rootHistory(saver)).filter((t) => t.metadata?.source === "input")[0];
      await graph.invoke({ messages: [new HumanMessage("q1 edited")] }, start.config);
      await saver.prune("t", { keep: 1 });
      const tipState = await graph.getState(tip.config);
      expect(texts(tipState.values.messages).at(-1)).toBe("answer to q1");
    });

    it("stores what each finished turn appended to the message list as one document", async () => {
      const { saver, db } = await newSaver();
      await runTurns(saver, "t", 3, true);
      await saver.prune("t", { keep: 1 });
      const links = (await documents(db, "checkpoint_blobs", "t")).filter((b) => b.channel === "messages");
      expect(links.map((l) => l.items.length)).toEqual([4, 4, 4]);
      expect(texts((await scriptedGraph(saver).getState(thread())).values.messages)).toHaveLength(12);
    });

    it("removes the blob versions no kept checkpoint reaches", async () => {
      const { saver, db } = await newSaver();
      await runTurns(saver, "t", 3, false);
      await saver.prune("t", { keep: 1 });
      const keptVersions = new Set((await rootHistory(saver)).flatMap((t) => Object.entries(t.checkpoint.channel_versions).map(([c, v]) => `${c}@${v}`)));
      for (const blob of await documents(db, "checkpoint_blobs", "t")) {
        if (blob.type !== "list") expect(keptVersions.has(`${blob.channel}@${blob.version}`), `${blob.channel}@${blob.version}`).toBe(true);
      }
    });

    it("leaves the kept checkpoints reading exactly as before", async () => {
      const { saver } = await newSaver();
      await runTurns(saver, "t", 3, false);
      const before = new Map((await rootHistory(saver)).map((t) => [t.checkpoint.id, t]));
      await saver.prune("t", { keep: 3 });
      const after = await rootHistory(saver);
      expect(after.length).toBeLessThan(before.size);
      for (const tuple of after) expect(tuple).toEqual(before.get(tuple.checkpoint.id));
    });

    it("lets the graph continue the thread after every prune", async () => {
      const { saver } = await newSaver();
      const state = await runTurns(saver, "t", 4, true);
      expect(state.messages.map((m) => m.getType())).toEqual(Array.from({ length: 4 }, () => ["human", "ai", "tool", "ai"]).flat());
    });

    it("keeps the bytes a thread stores growing by the same amount each turn", async () => {
      const { saver, db } = await newSaver();
      const sizes = [];
      for (let part = 0; part < 3; part += 1) {
        await runTurns(saver, "t", 6, true, part * 6);
        sizes.push(await storedBytes(db, "t"));
      }
      const [first, second] = [sizes[1] - sizes[0], sizes[2] - sizes[1]];
      expect(Math.abs(second - first) / first).toBeLessThan(0.1);
    });

    it("removes a subgraph's namespace whole once the root checkpoint that ran it is removed", async () => {
      const { saver, db } = await newSaver();
      const graph = graphWithSubgraph(saver);
      await graph.invoke({ messages: [new HumanMessage("q")] }, thread());
      const namespaced = async () => {
        const inSubgraphs = { thread_id: "t", checkpoint_ns: { $ne: "" } };
        const counts = await Promise.all(SAVER_COLLECTIONS.slice(0, 3).map((c) => db.collection(c).countDocuments(inSubgraphs)));
        return counts.reduce((a, b) => a + b, 0);
      };
      expect(await namespaced()).toBeGreaterThan(0);
      // The subgraph ran under the first step's checkpoint: among the latest 3, it stays; with keep 1, it goes.
      await saver.prune("t");
      expect(await namespaced()).toBeGreaterThan(0);
      await saver.prune("t", { keep: 1 });
      expect(await namespaced()).toBe(0);
      expect(texts((await graph.getState(thread())).values.messages)).toEqual(["q", "found", "summary (yes)", "answer"]);
    });

    it("keeps the namespace of a subgraph that is waiting for input, which then resumes", async () => {
      const { saver } = await newSaver();
      const graph = graphWithSubgraph(saver, { approval: true });
      await graph.invoke({ messages: [new HumanMessage("q")] }, thread());
      await saver.prune("t", { keep: 1 });
      const resumed = await graph.invoke(new Command({ resume: "approved" }), thread());
      expect(texts(resumed.messages)).toEqual(["q", "found", "summary (approved)", "answer"]);
    });

    it("removes what a stale fenced writer left once the thread is fenced above it", async () => {
      const serde = new GatedSerializer();
      const { saver, db } = await newSaverIn(test, {}, serde);
      await saver.claimThread("t", 1);
      const first = await saver.put({ configurable: { thread_id: "t", fence_epoch: 1 } }, checkpointWith({ a: [1] }, { a: 1 }), metadata, { a: 1 });
      // A stale writer's put that was fenced out while writing leaves its values behind.
      const release = gate();
      const reached = serde.arm("stale item", release.opened);
      const stale = saver.put({ configurable: { ...first.configurable, fence_epoch: 1 } }, checkpointWith({ a: [1, "stale item"] }, { a: 2.5 }), metadata, {
        a: 2.5,
      });
      await reached;
      await saver.claimThread("t", 2);
      release.open();
      await expect(stale).rejects.toThrow(StaleWriterError);
      // And a header it could not take back (it died before it could).
      const { _id, ...header } = (await db.collection("checkpoints").findOne({})) as Document;
      await db.collection("checkpoints").insertOne({ ...header, checkpoint_id: "z", epoch: 1, token: Number.MAX_SAFE_INTEGER });
      expect((await documents(db, "checkpoint_blobs", "t")).map((d) => d.version).sort()).toEqual(["1", "2.5"]);
      await saver.prune("t", { keep: 1 });
      expect((await documents(db, "checkpoints", "t")).map((d) => d.checkpoint_id)).toEqual([first.configurable?.checkpoint_id]);
      expect((await documents(db, "checkpoint_blobs", "t")).map((d) => d.version)).toEqual(["1"]);
    });

    it("throws StaleWriterError, removing nothing, when fenceEpoch is below the thread's fence", async () => {
      const { saver, db } = await newSaver();
      await runTurns(saver, "t", 2, false);
      await saver.claimThread("t", 3);
      const before = (await documents(db, "checkpoints", "t")).length;
      await expect(saver.prune("t", { keep: 1, fenceEpoch: 2 })).rejects.toThrow(StaleWriterError);
      expect((await documents(db, "checkpoints", "t")).length).toBe(before);
    });

    it("leaves other threads untouched", async () => {
      const { saver, db } = await newSaver();
      await runTurns(saver, "t", 2, false);
      await runTurns(saver, "other", 2, false);
      const counts = async () => Promise.all(SAVER_COLLECTIONS.map(async (c) => (await documents(db, c, "other")).length));
      const before = await counts();
      await saver.prune("t", { keep: 1 });
      expect(await counts()).toEqual(before);
    });

    it("throws when keep is not a positive integer", async () => {
      const { saver } = await newSaver();
      await expect(saver.prune("t", { keep: 0 })).rejects.toThrow(ValidationError);
    });
  });
});
