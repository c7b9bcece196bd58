import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { Annotation, END, Send, START, StateGraph } from "@langchain/langgraph";
import type { BaseCheckpointSaver, CheckpointTuple } from "@langchain/langgraph-checkpoint";
import { MongoDBSaver } from "@langchain/langgraph-checkpoint-mongodb";
import type { Db } from "mongodb";
import { ChannelValueMissingError } from "../../../lib/errors.js";
import { ThreadwiseSaver } from "../../../lib/store/threadwise-saver.js";
import { useTestDatabase } from "../../support/store-fixture.js";
import { newSaver, scriptedGraph } from "./saver-support.js";

// Each test makes its checkpointer on a database of its own (`newSaver`); this one holds the client.
const test = useTestDatabase("migration", { clearBeforeEach: false });

const thread = { configurable: { thread_id: "t" } };
const texts = (messages: BaseMessage[]) => messages.map((m) => String(m.content));

/** A Threadwise saver and a stock one on the same database and collections. */
async function bothSavers(): Promise<{ saver: ThreadwiseSaver; stock: MongoDBSaver; db: Db }> {
  const { saver, db } = await newSaver(test);
  const stock = new MongoDBSaver({ client: test.client, dbName: db.databaseName });
  return { saver, stock, db };
}

async function allTuples(saver: BaseCheckpointSaver): Promise<CheckpointTuple[]> {
  const tuples: CheckpointTuple[] = [];
  for await (const tuple of saver.list(thread)) tuples.push(tuple);
  return tuples;
}

/** Fans out one `work` task per item; a task named in `failing` throws until `failing` is emptied. */
const FanOut = Annotation.Root({
  items: Annotation<string[]>(),
  done: Annotation<string[]>({ reducer: (a, b) => [...a, ...b], default: () => [] }),
});

function fanOutGraph(checkpointer: BaseCheckpointSaver, failing: Set<string>, ran: string[]) {
  return new StateGraph(FanOut)
    .addNode("plan", () => ({}))
    .addNode("work", (state: { item: string }) => {
      ran.push(state.item);
      if (failing.has(state.item)) throw new Error(`work on ${state.item} failed`);
      return { done: [state.item] };
    })
    .addEdge(START, "plan")
    .addConditionalEdges("plan", (state) => state.items.map((item) => new Send("work", { item })))
    .addEdge("work", END)
    .compile({ checkpointer });
}

describe("ThreadwiseSaver", () => {
  describe("reading a thread written by stock MongoDBSaver", () => {
    it("reads every checkpoint of a finished thread exactly as stock reads it", async () => {
      const { saver, stock } = await bothSavers();
      const graph = scriptedGraph(stock);
      for (const question of ["q1", "q2", "q3"]) await graph.invoke({ messages: [new HumanMessage(question)] }, thread);
      const written = await allTuples(stock);
      expect(written.length).toBeGreaterThan(10);
      for (const tuple of written) {
        const read = await saver.getTuple(tuple.config);
        expect(read?.checkpoint).toEqual(tuple.checkpoint);
        expect(read?.metadata).toEqual(tuple.metadata);
        expect(read?.parentConfig).toEqual(tuple.parentConfig);
        expect(read?.pendingWrites).toEqual(expect.arrayContaining(tuple.pendingWrites ?? []));
      }
    });

    it("reads a thread interrupted mid-turn with its pending step, and resumes it", async () => {
      const { saver, stock } = await bothSavers();
      await scriptedGraph(stock, { interruptBefore: ["tools"] }).invoke({ messages: [new HumanMessage("q1")] }, thread);
      const stockState = await scriptedGraph(stock).getState(thread);
      const graph = scriptedGraph(saver, { interruptBefore: ["tools"] });
      const state = await graph.getState(thread);
      expect(stockState.next).toEqual(["tools"]);
      expect(state.next).toEqual(stockState.next);
      expect(state.values).toEqual(stockState.values);
      const resumed = await scriptedGraph(saver).invoke(null, thread);
      expect(texts(resumed.messages).at(-1)).toBe("answer to q1");
    });

    it("reads a thread that failed mid-step with its pending sends and writes, and resumes without rerunning finished tasks", async () => {
      const { saver, stock } = await bothSavers();
      const failing = new Set(["b"]);
      const ran: string[] = [];
      await expect(fanOutGraph(stock, failing, ran).invoke({ items: ["a", "b", "c"] }, thread)).rejects.toThrow("work on b failed");
      const stockState = await fanOutGraph(stock, failing, ran).getState(thread);
      const state = await fanOutGraph(saver, failing, ran).getState(thread);
      expect(stockState.tasks).toHaveLength(3);
      expect(state.next).toEqual(stockState.next);
      expect(state.values).toEqual(stockState.values);
      expect(state.tasks.map((t) => [t.name, t.error?.toString()])).toEqual(stockState.tasks.map((t) => [t.name, t.error?.toString()]));
      failing.clear();
      ran.length = 0;
      const resumed = await fanOutGraph(saver, failing, ran).invoke(null, thread);
      expect(ran).toEqual(["b"]);
      expect([...resumed.done].sort()).toEqual(["a", "b", "c"]);
    });

    it("keeps every message of a stock thread through prune, and continues it", async () => {
      const { saver, stock } = await bothSavers();
      const stockGraph = scriptedGraph(stock);
      for (const question of ["q1", "q2", "q3"]) await stockGraph.invoke({ messages: [new HumanMessage(question)] }, thread);
      const graph = scriptedGraph(saver);
      await saver.prune("t");
      expect((await graph.getState(thread)).values.messages).toHaveLength(12);
      await graph.invoke({ messages: [new HumanMessage("q4")] }, thread);
      await saver.prune("t", { keep: 1 });
      const state = await graph.getState(thread);
      expect(state.values.messages).toHaveLength(16);
      expect(texts(state.values.messages).filter((t) => t.startsWith("answer"))).toEqual(["answer to q1", "answer to q2", "answer to q3", "answer to q4"]);
    });

    it("copies every stock checkpoint (updateState as __copy__) with every value and version of its source", async () => {
      const { saver, stock } = await bothSavers();
      const stockGraph = scriptedGraph(stock);
      for (const question of ["q1", "q2"]) await stockGraph.invoke({ messages: [new HumanMessage(question)] }, thread);
      const graph = scriptedGraph(saver);
      const sources = (await allTuples(stock)).filter((tuple) => tuple.parentConfig !== undefined);
      expect(sources.length).toBeGreaterThan(5);
      for (const source of sources) {
        const copyConfig = await graph.updateState(source.config, null, "__copy__");
        const copy = await saver.getTuple(copyConfig);
        const versioned = (values: Record<string, unknown> = {}) => Object.keys(source.checkpoint.channel_versions).map((channel) => values[channel]);
        expect(copy?.checkpoint.channel_versions).toEqual(source.checkpoint.channel_versions);
        // Stock also keeps an empty, unversioned list of pending sends, which LangGraph reads as none.
        expect(versioned(copy?.checkpoint.channel_values)).toEqual(versioned(source.checkpoint.channel_values));
        expect((await graph.getState(copyConfig)).next).toEqual((await stockGraph.getState(source.config)).next);
      }
    });

    it("copies the head of a stock branch with its own messages, not another branch's at the same versions", async () => {
      const { saver, stock } = await bothSavers();
      const stockGraph = scriptedGraph(stock);
      await stockGraph.invoke({ messages: [new HumanMessage("q1")] }, thread);
      const afterQ1 = await stockGraph.getState(thread);
      await stockGraph.invoke({ messages: [new HumanMessage("q2")] }, thread);
      const q2Head = await stockGraph.getState(thread);
      // Stock forks after q1: its versions count up as on the first branch, so both heads name the same versions.
      await stockGraph.invoke({ messages: [new HumanMessage("q2, edited")] }, afterQ1.config);
      const editedHead = await stockGraph.getState(thread);
      expect(editedHead.config.configurable?.checkpoint_id).not.toBe(q2Head.config.configurable?.checkpoint_id);
      const graph = scriptedGraph(saver);
      await graph.invoke({ messages: [new HumanMessage("q3")] }, q2Head.config);

      const copy = await graph.updateState(editedHead.config, null, "__copy__");

      const copied = (await saver.getTuple(copy))?.checkpoint.channel_values.messages as BaseMessage[];
      expect(texts(copied).filter((t) => t.startsWith("q") || t.startsWith("answer"))).toEqual(["q1", "answer to q1", "q2, edited", "answer to q2, edited"]);
      const continued = await graph.invoke({ messages: [new HumanMessage("q4")] }, copy);
      expect(texts(continued.messages).filter((t) => t.startsWith("answer"))).toEqual(["answer to q1", "answer to q2, edited", "answer to q4"]);
      await saver.prune("t", { keep: 1 });
      const pruned = (await graph.getState(thread)).values.messages as BaseMessage[];
      expect(texts(pruned).filter((t) => t.startsWith("answer"))).toEqual(["answer to q1", "answer to q2, edited", "answer to q4"]);
    });

    it("leaves stock MongoDBSaver refusing the checkpoints it writes, rather than reading them without their values", async () => {
      const { saver, stock } = await bothSavers();
      await scriptedGraph(stock).invoke({ messages: [new HumanMessage("q1")] }, thread);
      const stockLatest = await stock.getTuple(thread);
      await scriptedGraph(saver).invoke({ messages: [new HumanMessage("q2")] }, thread);
      await expect(stock.getTuple(thread)).rejects.toThrow("Unknown serialization type");
      expect((await stock.getTuple(stockLatest?.config ?? thread))?.checkpoint).toEqual(stockLatest?.checkpoint);
    });
  });

  describe("reading a thread written by the release before list links named their ancestors", () => {
    it("reads every checkpoint of a thread whose links have no chain, continues it and prunes it", async () => {
      const { saver, db } = await newSaver(test);
      const graph = scriptedGraph(saver);
      for (let turn = 1; turn <= 4; turn += 1) {
        await graph.invoke({ messages: [new HumanMessage(`q${turn}`)] }, thread);
        await saver.prune("t");
      }
      const before = await allTuples(saver);
      // As that release wrote them: no `chain`.
      await db.collection("checkpoint_blobs").updateMany({}, { $unset: { chain: "" } });
      const reader = new ThreadwiseSaver({ client: test.client, dbName: db.databaseName });
      const after = await allTuples(reader);
      expect(after.map((t) => t.checkpoint.channel_values)).toEqual(before.map((t) => t.checkpoint.channel_values));
      const next = scriptedGraph(reader);
      await next.invoke({ messages: [new HumanMessage("q5")] }, thread);
      await reader.prune("t");
      expect(texts((await next.getState(thread)).values.messages).filter((text) => text.startsWith("q"))).toEqual(["q1", "q2", "q3", "q4", "q5"]);
      for await (const snapshot of next.getStateHistory(thread)) expect(snapshot.values).toBeDefined();
    });
  });

  describe("getTuple", () => {
    it("throws ChannelValueMissingError when a channel the checkpoint names has no stored value", async () => {
      const { saver, db } = await newSaver(test);
      await scriptedGraph(saver).invoke({ messages: [new HumanMessage("q1")] }, thread);
      await db.collection("checkpoint_blobs").deleteMany({ thread_id: "t", channel: "messages" });
      await expect(saver.getTuple(thread)).rejects.toThrow(ChannelValueMissingError);
    });

    it("throws ChannelValueMissingError when a list version it builds on is missing", async () => {
      const { saver, db } = await newSaver(test);
      const graph = scriptedGraph(saver);
      await graph.invoke({ messages: [new HumanMessage("q1")] }, thread);
      const links = await db.collection("checkpoint_blobs").find({ thread_id: "t", channel: "messages" }).sort({ version: 1 }).toArray();
      await db.collection("checkpoint_blobs").deleteOne({ _id: links[0]._id });
      await expect(saver.getTuple(thread)).rejects.toThrow(ChannelValueMissingError);
      await expect(graph.invoke({ messages: [new AIMessage("not written")] }, thread)).rejects.toThrow(ChannelValueMissingError);
    });
  });
});
