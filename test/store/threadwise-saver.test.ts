import { randomUUID } from "node:crypto";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { emptyCheckpoint, uuid6, type Checkpoint, type CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { MongoClient, type CommandStartedEvent, type Db } from "mongodb";
import { DocumentTooLargeError, ThreadwiseError, ValidationError } from "../../lib/errors.js";
import { DEFAULT_CHUNK_ITEMS } from "../../lib/store/checkpoint/channel-blob-store.js";
import { MONGODB_MAX_DOCUMENT_BYTES } from "../../lib/store/checkpoint/document-size.js";
import { ThreadwiseSaver, type ThreadwiseSaverOptions } from "../../lib/store/threadwise-saver.js";
import { mongoUri, openTestDatabase, type TestDatabase } from "../support/mongo.js";

let test: TestDatabase;

beforeAll(async () => {
  test = await openTestDatabase("saver");
});

afterAll(async () => {
  await test.client.close();
});

/** A saver on a database of its own, with its indexes. */
async function newSaver(options: Partial<ThreadwiseSaverOptions> = {}): Promise<{ saver: ThreadwiseSaver; db: Db }> {
  const dbName = `${test.dbName}_${randomUUID().slice(0, 8)}`;
  const saver = new ThreadwiseSaver({ client: test.client, dbName, ...options });
  expect(await saver.setup()).toEqual([]);
  return { saver, db: test.client.db(dbName) };
}

async function documents(db: Db, collection: string, threadId?: string) {
  return db
    .collection(collection)
    .find(threadId === undefined ? {} : { thread_id: threadId })
    .toArray();
}

const metadata: CheckpointMetadata = { source: "loop", step: 0, parents: {} };

function checkpointWith(values: Record<string, unknown>, versions: Record<string, number>): Checkpoint {
  return { ...emptyCheckpoint(), id: uuid6(-1), channel_values: values, channel_versions: versions };
}

/** A scripted agent and tool: each user message gets one tool call, a tool result, then an answer. */
function scriptedGraph(saver: ThreadwiseSaver) {
  const lastOf = (messages: BaseMessage[]) => messages[messages.length - 1];
  return new StateGraph(MessagesAnnotation)
    .addNode("agent", ({ messages }) => {
      const last = lastOf(messages);
      if (HumanMessage.isInstance(last)) {
        return { messages: [new AIMessage({ content: "", tool_calls: [{ id: randomUUID(), name: "lookup", args: {} }] })] };
      }
      return { messages: [new AIMessage(`answer ${messages.length}`)] };
    })
    .addNode("tools", ({ messages }) => {
      const call = (lastOf(messages) as AIMessage).tool_calls?.[0];
      return { messages: [new ToolMessage({ content: "row ".repeat(50), tool_call_id: call?.id ?? "" })] };
    })
    .addEdge(START, "agent")
    .addConditionalEdges("agent", ({ messages }) => ((lastOf(messages) as AIMessage).tool_calls?.length ? "tools" : END))
    .addEdge("tools", "agent")
    .compile({ checkpointer: saver });
}

async function runTurns(saver: ThreadwiseSaver, threadId: string, turns: number, prune: boolean) {
  const graph = scriptedGraph(saver);
  let state: { messages: BaseMessage[] } = { messages: [] };
  for (let turn = 0; turn < turns; turn += 1) {
    state = await graph.invoke({ messages: [new HumanMessage(`question ${turn}`)] }, { configurable: { thread_id: threadId } });
    if (prune) await saver.prune(threadId);
  }
  return state;
}

describe("ThreadwiseSaver", () => {
  describe("constructor", () => {
    it("throws when maxDocumentBytes is above MongoDB's 16 MB limit", () => {
      expect(() => new ThreadwiseSaver({ client: test.client, maxDocumentBytes: MONGODB_MAX_DOCUMENT_BYTES + 1 })).toThrow(
        ValidationError,
      );
    });

    it("throws when checkpointsKept is not a positive integer", () => {
      expect(() => new ThreadwiseSaver({ client: test.client, checkpointsKept: 0 })).toThrow(ValidationError);
    });
  });

  describe("setup", () => {
    it("creates a unique (thread, namespace, channel, version) index on the blobs", async () => {
      const { db } = await newSaver();
      const indexes = await db.collection("checkpoint_blobs").listIndexes().toArray();
      expect(indexes).toContainEqual(
        expect.objectContaining({ key: { thread_id: 1, checkpoint_ns: 1, channel: 1, version: 1 }, unique: true }),
      );
    });

    it("creates upserted_at TTL indexes on the three collections when a ttl is set", async () => {
      const { db } = await newSaver({ ttl: 3600 });
      for (const name of ["checkpoints", "checkpoint_writes", "checkpoint_blobs"]) {
        const indexes = await db.collection(name).listIndexes().toArray();
        expect(indexes).toContainEqual(expect.objectContaining({ key: { upserted_at: 1 }, expireAfterSeconds: 3600 }));
      }
    });

    it("uses the configured collection names", async () => {
      const { saver, db } = await newSaver({
        checkpointCollectionName: "cp",
        checkpointWritesCollectionName: "cpw",
        checkpointBlobsCollectionName: "cpb",
      });
      const config = await saver.put({ configurable: { thread_id: "t" } }, checkpointWith({ a: 1 }, { a: 1 }), metadata, { a: 1 });
      await saver.putWrites(config, [["a", 2]], "task");
      expect((await documents(db, "cp")).length).toBe(1);
      expect((await documents(db, "cpw")).length).toBe(1);
      expect((await documents(db, "cpb")).length).toBe(1);
    });
  });

  describe("put", () => {
    it("writes only the channel versions named in newVersions", async () => {
      const { saver, db } = await newSaver();
      const first = await saver.put(
        { configurable: { thread_id: "t" } },
        checkpointWith({ big: "unchanged", small: 1 }, { big: 1, small: 1 }),
        metadata,
        { big: 1, small: 1 },
      );
      await saver.put(first, checkpointWith({ big: "unchanged", small: 2 }, { big: 1, small: 2 }), metadata, { small: 2 });
      const blobs = await documents(db, "checkpoint_blobs", "t");
      expect(blobs.map((b) => `${b.channel}@${b.version}`).sort()).toEqual(["big@1", "small@1", "small@2"]);
    });

    it("returns channel values written by earlier checkpoints", async () => {
      const { saver } = await newSaver();
      const first = await saver.put(
        { configurable: { thread_id: "t" } },
        checkpointWith({ big: "unchanged", small: 1 }, { big: 1, small: 1 }),
        metadata,
        { big: 1, small: 1 },
      );
      const second = await saver.put(first, checkpointWith({ big: "unchanged", small: 2 }, { big: 1, small: 2 }), metadata, {
        small: 2,
      });
      expect((await saver.getTuple(second))?.checkpoint.channel_values).toEqual({ big: "unchanged", small: 2 });
    });

    it("stores a long list once per chunk and writes only the chunks a new version changes", async () => {
      const monitored = new MongoClient(mongoUri(), { monitorCommands: true });
      onTestFinished(() => monitored.close());
      const { saver, db } = await newSaver({ client: monitored });
      const long = Array.from({ length: DEFAULT_CHUNK_ITEMS * 2 + 3 }, (_, i) => ({ item: i }));
      const first = await saver.put({ configurable: { thread_id: "t" } }, checkpointWith({ list: long }, { list: 1 }), metadata, { list: 1 });
      const longer = [...long, { item: "appended" }];
      const updates: unknown[] = [];
      const listener = (event: CommandStartedEvent) => {
        if (event.commandName === "update" && event.command.update === "checkpoint_blobs") updates.push(...event.command.updates);
      };
      monitored.on("commandStarted", listener);
      const second = await saver.put(first, checkpointWith({ list: longer }, { list: 2 }), metadata, { list: 2 });
      monitored.off("commandStarted", listener);
      // The changed last chunk and the version listing the chunks; the two full chunks are shared.
      expect(updates.length).toBe(2);
      const chunks = (await documents(db, "checkpoint_blobs", "t")).filter((b) => b.chunk === true);
      expect(chunks.length).toBe(4);
      expect((await saver.getTuple(first))?.checkpoint.channel_values).toEqual({ list: long });
      expect((await saver.getTuple(second))?.checkpoint.channel_values).toEqual({ list: longer });
    });

    it("throws DocumentTooLargeError before writing anything when a channel value exceeds the limit", async () => {
      const { saver, db } = await newSaver({ maxDocumentBytes: 10_000 });
      const put = saver.put(
        { configurable: { thread_id: "t" } },
        checkpointWith({ small: 1, big: "x".repeat(20_000) }, { small: 1, big: 1 }),
        metadata,
        { small: 1, big: 1 },
      );
      await expect(put).rejects.toThrow(DocumentTooLargeError);
      await expect(put).rejects.toMatchObject({ limit: 10_000, bytes: expect.any(Number) });
      expect(await documents(db, "checkpoints")).toEqual([]);
      expect(await documents(db, "checkpoint_blobs")).toEqual([]);
    });

    it("stamps upserted_at on every document it writes when a ttl is set", async () => {
      const { saver, db } = await newSaver({ ttl: 3600 });
      const config = await saver.put({ configurable: { thread_id: "t" } }, checkpointWith({ a: 1 }, { a: 1 }), metadata, { a: 1 });
      await saver.putWrites(config, [["a", 2]], "task");
      for (const name of ["checkpoints", "checkpoint_writes", "checkpoint_blobs"]) {
        for (const doc of await documents(db, name)) expect(doc.upserted_at).toBeInstanceOf(Date);
      }
    });

    it("refreshes upserted_at of the unchanged blobs a new checkpoint references, when a ttl is set", async () => {
      const { saver, db } = await newSaver({ ttl: 3600 });
      const first = await saver.put(
        { configurable: { thread_id: "t" } },
        checkpointWith({ kept: "v", moving: 1 }, { kept: 1, moving: 1 }),
        metadata,
        { kept: 1, moving: 1 },
      );
      const [before] = await db.collection("checkpoint_blobs").find({ channel: "kept" }).toArray();
      await new Promise((resolve) => setTimeout(resolve, 20));
      await saver.put(first, checkpointWith({ kept: "v", moving: 2 }, { kept: 1, moving: 2 }), metadata, { moving: 2 });
      const [after] = await db.collection("checkpoint_blobs").find({ channel: "kept" }).toArray();
      expect(after.upserted_at.getTime()).toBeGreaterThan(before.upserted_at.getTime());
    });
  });

  describe("getTuple", () => {
    it("throws when a chunk of a stored list is missing, rather than returning part of the list", async () => {
      const { saver, db } = await newSaver();
      const long = Array.from({ length: DEFAULT_CHUNK_ITEMS * 2 }, (_, i) => ({ item: i }));
      const config = await saver.put({ configurable: { thread_id: "t" } }, checkpointWith({ list: long }, { list: 1 }), metadata, { list: 1 });
      await db.collection("checkpoint_blobs").deleteOne({ thread_id: "t", chunk: true });
      await expect(saver.getTuple(config)).rejects.toThrow(ThreadwiseError);
    });
  });

  describe("putWrites", () => {
    it("throws DocumentTooLargeError when a write exceeds the limit, writing none of the batch", async () => {
      const { saver, db } = await newSaver({ maxDocumentBytes: 10_000 });
      const config = await saver.put({ configurable: { thread_id: "t" } }, checkpointWith({}, {}), metadata, {});
      await expect(saver.putWrites(config, [["a", "small"], ["b", "x".repeat(20_000)]], "task")).rejects.toThrow(
        DocumentTooLargeError,
      );
      expect(await documents(db, "checkpoint_writes")).toEqual([]);
    });

    it("returns pending writes in task path order, whatever the order they were stored in", async () => {
      const { saver } = await newSaver();
      const config = await saver.put({ configurable: { thread_id: "t" } }, checkpointWith({}, {}), metadata, {});
      await saver.putWrites(config, [["c", "second"]], "task-a", "~2");
      await saver.putWrites(config, [["c", "first"]], "task-b", "~1");
      expect((await saver.getTuple(config))?.pendingWrites).toEqual([
        ["task-b", "c", "first"],
        ["task-a", "c", "second"],
      ]);
    });
  });

  describe("prune", () => {
    it("keeps the latest `keep` checkpoints of the thread and removes older ones with their writes", async () => {
      const { saver, db } = await newSaver();
      await runTurns(saver, "t", 2, false);
      const all = await documents(db, "checkpoints", "t");
      const newest = all.map((d) => d.checkpoint_id as string).sort().slice(-2);
      const result = await saver.prune("t", { keep: 2 });
      const remaining = await documents(db, "checkpoints", "t");
      expect(remaining.map((d) => d.checkpoint_id).sort()).toEqual(newest);
      expect(result.checkpoints).toBe(all.length - 2);
      const writes = await documents(db, "checkpoint_writes", "t");
      expect(writes.every((w) => w.checkpoint_id >= newest[0])).toBe(true);
    });

    it("removes the blob versions no kept checkpoint references", async () => {
      const { saver, db } = await newSaver();
      await runTurns(saver, "t", 3, false);
      await saver.prune("t", { keep: 1 });
      const [latest] = await documents(db, "checkpoints", "t");
      const header = (await saver.getTuple({ configurable: { thread_id: "t" } }))?.checkpoint;
      expect(header?.id).toBe(latest.checkpoint_id);
      const blobs = await documents(db, "checkpoint_blobs", "t");
      const referenced = Object.entries(header?.channel_versions ?? {}).map(([c, v]) => `${c}@${v}`);
      for (const blob of blobs) expect(referenced).toContain(`${blob.channel}@${blob.version}`);
    });

    it("removes the chunks no remaining version lists and keeps those it does", async () => {
      const { saver, db } = await newSaver();
      const list = (n: number) => Array.from({ length: n }, (_, i) => ({ item: i }));
      let config = await saver.put({ configurable: { thread_id: "t" } }, checkpointWith({ list: list(20) }, { list: 1 }), metadata, { list: 1 });
      config = await saver.put(config, checkpointWith({ list: list(21) }, { list: 2 }), metadata, { list: 2 });
      config = await saver.put(config, checkpointWith({ list: list(40) }, { list: 3 }), metadata, { list: 3 });
      await saver.prune("t", { keep: 1 });
      const chunks = (await documents(db, "checkpoint_blobs", "t")).filter((b) => b.chunk === true);
      expect(chunks.length).toBe(3);
      expect((await saver.getTuple(config))?.checkpoint.channel_values).toEqual({ list: list(40) });
    });

    it("leaves the kept checkpoints reading exactly as before", async () => {
      const { saver } = await newSaver();
      await runTurns(saver, "t", 3, false);
      const before = [];
      for await (const tuple of saver.list({ configurable: { thread_id: "t" } }, { limit: 3 })) before.push(tuple);
      await saver.prune("t", { keep: 3 });
      const after = [];
      for await (const tuple of saver.list({ configurable: { thread_id: "t" } })) after.push(tuple);
      expect(after).toEqual(before);
    });

    it("lets the graph continue the thread after every prune", async () => {
      const { saver } = await newSaver();
      const state = await runTurns(saver, "t", 4, true);
      expect(state.messages.map((m) => m.getType())).toEqual(
        Array.from({ length: 4 }, () => ["human", "ai", "tool", "ai"]).flat(),
      );
    });

    it("keeps the stored message list to the kept versions and the chunks they list", async () => {
      const { saver, db } = await newSaver({ checkpointsKept: 2 });
      const state = await runTurns(saver, "t", 10, true);
      const messageBlobs = (await documents(db, "checkpoint_blobs", "t")).filter((b) => b.channel === "messages");
      const versions = messageBlobs.filter((b) => b.chunk !== true);
      const chunks = messageBlobs.filter((b) => b.chunk === true);
      expect(versions.length).toBeLessThanOrEqual(2);
      const listed = new Set(versions.flatMap((v) => v.chunks ?? []).map((hash: string) => `chunk:${hash}`));
      expect(chunks.map((c) => c.version).sort()).toEqual([...listed].sort());
      expect(chunks.length).toBeLessThanOrEqual(Math.ceil(state.messages.length / DEFAULT_CHUNK_ITEMS) + 2);
    });

    it("leaves other threads untouched", async () => {
      const { saver, db } = await newSaver();
      await runTurns(saver, "t", 2, false);
      await runTurns(saver, "other", 2, false);
      const counts = async () =>
        Promise.all(["checkpoints", "checkpoint_writes", "checkpoint_blobs"].map(async (c) => (await documents(db, c, "other")).length));
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
    it("removes every checkpoint, write and blob of the thread and nothing of other threads", async () => {
      const { saver, db } = await newSaver();
      await runTurns(saver, "t", 2, false);
      await runTurns(saver, "other", 1, false);
      await saver.deleteThread("t");
      for (const name of ["checkpoints", "checkpoint_writes", "checkpoint_blobs"]) {
        expect(await documents(db, name, "t")).toEqual([]);
        expect((await documents(db, name, "other")).length).toBeGreaterThan(0);
      }
    });
  });
});
