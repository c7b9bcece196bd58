import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { Command, END, MessagesAnnotation, START, StateGraph, interrupt } from "@langchain/langgraph";
import type { CheckpointTuple } from "@langchain/langgraph-checkpoint";
import { BSON, MongoClient, type CommandStartedEvent, type Db, type Document } from "mongodb";
import { ChannelVersionConflictError, DocumentTooLargeError, StaleWriterError, ValidationError } from "../../lib/errors.js";
import { MONGODB_MAX_DOCUMENT_BYTES } from "../../lib/store/checkpoint/document-size.js";
import { DEFAULT_INLINE_VALUE_BYTES, ThreadwiseSaver } from "../../lib/store/threadwise-saver.js";
import { mongoUri } from "../support/mongo.js";
import { useTestDatabase } from "../support/store-fixture.js";
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
} from "./checkpoint/saver-support.js";

// Each test makes its checkpointer on a database of its own (`newSaver`); this one holds the client.
const test = useTestDatabase("saver", { clearBeforeEach: false });

const newSaver = (options: Parameters<typeof newSaverIn>[1] = {}) => newSaverIn(test, options);
const thread = (thread_id = "t") => ({ configurable: { thread_id } });
/** A string value too large to be kept in a header. */
const large = (text: string) => text.padEnd(DEFAULT_INLINE_VALUE_BYTES + 1, ".");
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

describe("ThreadwiseSaver", () => {
  describe("constructor", () => {
    it("throws when maxDocumentBytes is above MongoDB's 16 MB limit", () => {
      expect(() => new ThreadwiseSaver({ client: test.client, maxDocumentBytes: MONGODB_MAX_DOCUMENT_BYTES + 1 })).toThrow(ValidationError);
    });

    it("throws when checkpointsKept is not a positive integer", () => {
      expect(() => new ThreadwiseSaver({ client: test.client, checkpointsKept: 0 })).toThrow(ValidationError);
    });
  });

  describe("setup", () => {
    it("creates a unique (thread, namespace, channel, version) index on the blobs", async () => {
      const { db } = await newSaver();
      const indexes = await db.collection("checkpoint_blobs").listIndexes().toArray();
      expect(indexes).toContainEqual(expect.objectContaining({ key: { thread_id: 1, checkpoint_ns: 1, channel: 1, version: 1 }, unique: true }));
    });

    it("creates upserted_at TTL indexes on the four collections when a ttl is set", async () => {
      const { db } = await newSaver({ ttl: 3600 });
      for (const name of SAVER_COLLECTIONS) {
        const indexes = await db.collection(name).listIndexes().toArray();
        expect(indexes, name).toContainEqual(expect.objectContaining({ key: { upserted_at: 1 }, expireAfterSeconds: 3600 }));
      }
    });

    it("uses the configured collection names", async () => {
      const { saver, db } = await newSaver({
        checkpointCollectionName: "cp",
        checkpointWritesCollectionName: "cpw",
        checkpointBlobsCollectionName: "cpb",
        checkpointThreadsCollectionName: "cpt",
      });
      await saver.claimThread("t", 1);
      const config = await saver.put({ configurable: { thread_id: "t", fence_epoch: 1 } }, checkpointWith({ a: [1] }, { a: 1 }), metadata, { a: 1 });
      await saver.putWrites(config, [["a", 2]], "task");
      for (const name of ["cp", "cpw", "cpb", "cpt"]) expect((await documents(db, name)).length, name).toBe(1);
    });
  });

  describe("put", () => {
    it("writes only the channel versions named in newVersions", async () => {
      const { saver, db } = await newSaver();
      const first = await saver.put(thread(), checkpointWith({ big: large("unchanged"), other: large("1") }, { big: 1, other: 1 }), metadata, {
        big: 1,
        other: 1,
      });
      await saver.put(first, checkpointWith({ big: large("unchanged"), other: large("2") }, { big: 1, other: 2 }), metadata, { other: 2 });
      const blobs = await documents(db, "checkpoint_blobs", "t");
      expect(blobs.map((b) => `${b.channel}@${b.version}`).sort()).toEqual(["big@1", "other@1", "other@2"]);
    });

    it("throws ChannelVersionConflictError when a version is written again with another value, keeping the first", async () => {
      const { saver } = await newSaver();
      const first = await saver.put(thread(), checkpointWith({ a: large("first") }, { a: 1 }), metadata, { a: 1 });
      await expect(saver.put(thread(), checkpointWith({ a: large("second") }, { a: 1 }), metadata, { a: 1 })).rejects.toThrow(ChannelVersionConflictError);
      expect((await saver.getTuple(first))?.checkpoint.channel_values).toEqual({ a: large("first") });
    });

    it("keeps a small value in the checkpoint's header rather than in a blob", async () => {
      const { saver, db } = await newSaver();
      const config = await saver.put(thread(), checkpointWith({ small: "s", big: large("b") }, { small: 1, big: 1 }), metadata, { small: 1, big: 1 });
      expect((await documents(db, "checkpoint_blobs", "t")).map((b) => b.channel)).toEqual(["big"]);
      expect((await saver.getTuple(config))?.checkpoint.channel_values).toEqual({ small: "s", big: large("b") });
    });

    it("returns channel values written by earlier checkpoints", async () => {
      const { saver } = await newSaver();
      const first = await saver.put(thread(), checkpointWith({ big: large("unchanged"), small: 1 }, { big: 1, small: 1 }), metadata, { big: 1, small: 1 });
      const second = await saver.put(first, checkpointWith({ big: large("unchanged"), small: 2 }, { big: 1, small: 2 }), metadata, { small: 2 });
      expect((await saver.getTuple(second))?.checkpoint.channel_values).toEqual({ big: large("unchanged"), small: 2 });
    });

    it("returns every value of a checkpoint put beside its source with no new versions, as updateState's __copy__ puts one", async () => {
      const { saver } = await newSaver();
      const first = await saver.put(thread(), checkpointWith({ big: large("b"), small: 1, list: ["a"] }, { big: 1, small: 1, list: 1 }), metadata, {
        big: 1,
        small: 1,
        list: 1,
      });
      const source = checkpointWith({ big: large("b"), small: 2, list: ["a", "b"] }, { big: 1, small: 2, list: 2 });
      await saver.put(first, source, metadata, { small: 2, list: 2 });
      // The copy's parent is its source's parent; its values are the source's, none of them new.
      const copy = await saver.put(first, { ...source, id: checkpointWith({}, {}).id }, { ...metadata, source: "fork" }, {});
      expect((await saver.getTuple(copy))?.checkpoint.channel_values).toEqual({ big: large("b"), small: 2, list: ["a", "b"] });
    });

    it("stores only the items a list version appends to its parent's version", async () => {
      const monitored = new MongoClient(mongoUri(), { monitorCommands: true });
      onTestFinished(() => monitored.close());
      const { saver } = await newSaver({ client: monitored });
      const long = Array.from({ length: 40 }, (_, i) => ({ item: i, text: "x".repeat(1000) }));
      const first = await saver.put(thread(), checkpointWith({ list: long }, { list: 1 }), metadata, { list: 1 });
      const longer = [...long, { item: "appended" }];
      const written: BSON.Document[] = [];
      const listener = (event: CommandStartedEvent) => {
        if (event.commandName === "update" && event.command.update === "checkpoint_blobs") written.push(...event.command.updates);
      };
      monitored.on("commandStarted", listener);
      const second = await saver.put(first, checkpointWith({ list: longer }, { list: 2 }), metadata, { list: 2 });
      monitored.off("commandStarted", listener);
      expect(written).toHaveLength(1);
      expect(written[0].u.$setOnInsert.items).toHaveLength(1);
      expect((await saver.getTuple(first))?.checkpoint.channel_values).toEqual({ list: long });
      expect((await saver.getTuple(second))?.checkpoint.channel_values).toEqual({ list: longer });
    });

    it("stores a list that is not its parent's list extended whole, and reads both back", async () => {
      const { saver } = await newSaver();
      const first = await saver.put(thread(), checkpointWith({ list: ["a", "b", "c"] }, { list: 1 }), metadata, { list: 1 });
      const second = await saver.put(first, checkpointWith({ list: ["a", "changed", "c", "d"] }, { list: 2 }), metadata, { list: 2 });
      expect((await saver.getTuple(first))?.checkpoint.channel_values).toEqual({ list: ["a", "b", "c"] });
      expect((await saver.getTuple(second))?.checkpoint.channel_values).toEqual({ list: ["a", "changed", "c", "d"] });
    });

    it("throws DocumentTooLargeError before writing anything when a channel value exceeds the limit", async () => {
      const { saver, db } = await newSaver({ maxDocumentBytes: 10_000 });
      const put = saver.put(thread(), checkpointWith({ small: 1, big: "x".repeat(20_000) }, { small: 1, big: 1 }), metadata, { small: 1, big: 1 });
      await expect(put).rejects.toThrow(DocumentTooLargeError);
      await expect(put).rejects.toMatchObject({ limit: 10_000, bytes: expect.any(Number) });
      expect(await documents(db, "checkpoints")).toEqual([]);
      expect(await documents(db, "checkpoint_blobs")).toEqual([]);
    });

    it("stamps upserted_at on every document it writes when a ttl is set", async () => {
      const { saver, db } = await newSaver({ ttl: 3600 });
      await saver.claimThread("t", 1);
      const config = await saver.put({ configurable: { thread_id: "t", fence_epoch: 1 } }, checkpointWith({ a: [1] }, { a: 1 }), metadata, { a: 1 });
      await saver.putWrites(config, [["a", 2]], "task");
      for (const name of SAVER_COLLECTIONS) {
        expect((await documents(db, name)).length, name).toBeGreaterThan(0);
        for (const doc of await documents(db, name)) expect(doc.upserted_at, name).toBeInstanceOf(Date);
      }
    });

    it("stamps expiresAt, expiresAfterMs after the write, on every document it writes when expiresAfterMs is set", async () => {
      const { saver, db } = await newSaver({ expiresAfterMs: 3_600_000 });
      const before = Date.now();
      await saver.claimThread("t", 1);
      const config = await saver.put({ configurable: { thread_id: "t", fence_epoch: 1 } }, checkpointWith({ a: [1] }, { a: 1 }), metadata, { a: 1 });
      await saver.putWrites(config, [["a", 2]], "task");
      for (const name of SAVER_COLLECTIONS) {
        expect((await documents(db, name)).length, name).toBeGreaterThan(0);
        for (const doc of await documents(db, name)) {
          expect(doc.expiresAt.getTime(), name).toBeGreaterThanOrEqual(before + 3_600_000);
          expect(doc.expiresAt.getTime(), name).toBeLessThanOrEqual(Date.now() + 3_600_000);
        }
      }
    });

    it("refreshes upserted_at of the blobs refreshed more than half the ttl ago, when a ttl is set", async () => {
      const { saver, db } = await newSaver({ ttl: 1 });
      const first = await saver.put(thread(), checkpointWith({ kept: ["v"], moving: 1 }, { kept: 1, moving: 1 }), metadata, { kept: 1, moving: 1 });
      const [before] = await db.collection("checkpoint_blobs").find({ channel: "kept" }).toArray();
      await new Promise((resolve) => setTimeout(resolve, 600));
      await saver.put(first, checkpointWith({ kept: ["v"], moving: 2 }, { kept: 1, moving: 2 }), metadata, { moving: 2 });
      const [after] = await db.collection("checkpoint_blobs").find({ channel: "kept" }).toArray();
      expect(after.upserted_at.getTime()).toBeGreaterThan(before.upserted_at.getTime());
    });

    it("leaves upserted_at of blobs refreshed less than half the ttl ago, so a put does not rewrite the thread", async () => {
      const { saver, db } = await newSaver({ ttl: 3600 });
      const first = await saver.put(thread(), checkpointWith({ kept: ["v"], moving: 1 }, { kept: 1, moving: 1 }), metadata, { kept: 1, moving: 1 });
      const [before] = await db.collection("checkpoint_blobs").find({ channel: "kept" }).toArray();
      await new Promise((resolve) => setTimeout(resolve, 20));
      await saver.put(first, checkpointWith({ kept: ["v"], moving: 2 }, { kept: 1, moving: 2 }), metadata, { moving: 2 });
      const [after] = await db.collection("checkpoint_blobs").find({ channel: "kept" }).toArray();
      expect(after.upserted_at.getTime()).toBe(before.upserted_at.getTime());
    });
  });

  describe("putWrites", () => {
    it("throws DocumentTooLargeError when a write exceeds the limit, writing none of the batch", async () => {
      const { saver, db } = await newSaver({ maxDocumentBytes: 10_000 });
      const config = await saver.put(thread(), checkpointWith({}, {}), metadata, {});
      await expect(
        saver.putWrites(
          config,
          [
            ["a", "small"],
            ["b", "x".repeat(20_000)],
          ],
          "task",
        ),
      ).rejects.toThrow(DocumentTooLargeError);
      expect(await documents(db, "checkpoint_writes")).toEqual([]);
    });

    it("returns pending writes in task path order, whatever the order they were stored in", async () => {
      const { saver } = await newSaver();
      const config = await saver.put(thread(), checkpointWith({}, {}), metadata, {});
      await saver.putWrites(config, [["c", "second"]], "task-a", "~2");
      await saver.putWrites(config, [["c", "first"]], "task-b", "~1");
      expect((await saver.getTuple(config))?.pendingWrites).toEqual([
        ["task-b", "c", "first"],
        ["task-a", "c", "second"],
      ]);
    });
  });

  describe("prune", () => {
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

  describe("deleteThread", () => {
    it("removes every checkpoint, write, blob and fence of the thread and nothing of other threads", async () => {
      const { saver, db } = await newSaver();
      await saver.claimThread("t", 1);
      await saver.claimThread("other", 1);
      await runTurns(saver, "t", 2, false);
      await runTurns(saver, "other", 1, false);
      await saver.deleteThread("t");
      for (const name of SAVER_COLLECTIONS) {
        expect(await documents(db, name, "t")).toEqual([]);
        expect((await documents(db, name, "other")).length).toBeGreaterThan(0);
      }
    });
  });
});
