import { createHash } from "node:crypto";
import { HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { JsonPlusSerializer } from "@langchain/langgraph-checkpoint";
import { Binary, type Db } from "mongodb";
import type { BlobDocument } from "../../../lib/store/checkpoint/channel-blob-store.js";
import { COLLECTIONS } from "../../../lib/store/collections.js";
import { ThreadwiseDatabase } from "../../../lib/store/database.js";
import { CHUNKED_TYPE, chunkVersion } from "../../../lib/store/migrations/003-list-link-formats.js";
import { MIGRATIONS } from "../../../lib/store/migrations/migration-runner.js";
import { ThreadwiseSaver } from "../../../lib/store/threadwise-saver.js";
import { useTestDatabase } from "../../support/store-fixture.js";
import { newSaver, scriptedGraph, snapshotThread } from "../checkpoint/saver-support.js";

// Each test makes its checkpointer on a database of its own (`newSaver`); this one holds the client.
const test = useTestDatabase("list_link_formats", { clearBeforeEach: false });

const thread = { configurable: { thread_id: "t" } };
const serde = new JsonPlusSerializer();
const texts = (messages: BaseMessage[]) => messages.map((m) => String(m.content));

/** Items chunked per list version, and the chunks, as releases before list links stored a list. */
async function rewriteAsChunks(db: Db): Promise<void> {
  const blobs = db.collection<BlobDocument & { chunks?: string[]; chunk?: true }>("checkpoint_blobs");
  const links = await blobs.find({ type: "list" }).toArray();
  const byVersion = new Map(links.map((l) => [l.version, l]));
  const written: (BlobDocument & { chunks?: string[]; chunk?: true })[] = [];
  const chunks = new Map<string, BlobDocument & { chunk: true }>();
  for (const head of links.filter((l) => !l.version.includes("#"))) {
    const chain: BlobDocument[] = [];
    for (let link: BlobDocument | undefined = head; link; link = link.base === undefined ? undefined : byVersion.get(link.base)) chain.unshift(link);
    const items: unknown[] = [];
    for (const link of chain) {
      for (const [i, bytes] of (link.items ?? []).entries()) items.push(await serde.loadsTyped((link.item_types ?? [])[i] ?? "json", bytes.buffer));
    }
    const hashes: string[] = [];
    for (let start = 0; start < items.length; start += 3) {
      const [type, bytes] = await serde.dumpsTyped(items.slice(start, start + 3));
      const hash = createHash("sha256").update(bytes).digest("hex");
      hashes.push(hash);
      const { thread_id, checkpoint_ns, channel } = head;
      chunks.set(hash, { thread_id, checkpoint_ns, channel, version: chunkVersion(hash), type, blob: new Binary(bytes), chunk: true });
    }
    const { thread_id, checkpoint_ns, channel, version, epoch } = head;
    written.push({ thread_id, checkpoint_ns, channel, version, type: CHUNKED_TYPE, blob: null, chunks: hashes, ...(epoch === undefined ? {} : { epoch }) });
  }
  await blobs.deleteMany({ type: "list" });
  await blobs.insertMany([...written, ...chunks.values()]);
}

const setUp = (db: Db) => new ThreadwiseDatabase(test.client, { dbName: db.databaseName }).setup();

describe("migration 003 list-link-formats", () => {
  describe("up (run by ThreadwiseDatabase.setup, npm run db:setup)", () => {
    it("rewrites chunked list versions into links, every checkpoint reading the same messages, and the thread continues", async () => {
      const { saver, db } = await newSaver(test);
      const graph = scriptedGraph(saver);
      for (let turn = 1; turn <= 3; turn++) await graph.invoke({ messages: [new HumanMessage(`q${turn}`)] }, thread);
      const written = await snapshotThread(saver, "t");
      await rewriteAsChunks(db);
      const blobs = db.collection<BlobDocument>("checkpoint_blobs");
      expect(await blobs.countDocuments({ type: CHUNKED_TYPE })).toBeGreaterThan(3);

      await setUp(db);
      expect(await db.collection(COLLECTIONS.setup).findOne({ _id: "schema" as never })).toMatchObject({
        schemaVersion: MIGRATIONS.length,
        applied: expect.objectContaining({ "003": expect.objectContaining({ name: "list-link-formats" }) }),
      });

      expect(await blobs.countDocuments({ $or: [{ type: CHUNKED_TYPE }, { chunk: true }] })).toBe(0);
      expect(await blobs.countDocuments({ type: "list", chain: { $exists: false } })).toBe(0);
      const fresh = new ThreadwiseSaver({ client: test.client, dbName: db.databaseName });
      expect(await snapshotThread(fresh, "t")).toEqual(written);
      const next = scriptedGraph(fresh);
      await next.invoke({ messages: [new HumanMessage("q4")] }, thread);
      await fresh.prune("t", { keep: 1 });
      expect(texts((await next.getState(thread)).values.messages).filter((text) => text.startsWith("q"))).toEqual(["q1", "q2", "q3", "q4"]);
      // Set up again: nothing left to do.
      await setUp(db);
      expect(await snapshotThread(fresh, "t")).toEqual(await snapshotThread(new ThreadwiseSaver({ client: test.client, dbName: db.databaseName }), "t"));
    });

    it("gives list links written before links named their ancestors their chain, and the thread reads, continues and prunes", async () => {
      const { saver, db } = await newSaver(test);
      const graph = scriptedGraph(saver);
      for (let turn = 1; turn <= 4; turn += 1) {
        await graph.invoke({ messages: [new HumanMessage(`q${turn}`)] }, thread);
        await saver.prune("t");
      }
      const written = await snapshotThread(saver, "t");
      const blobs = db.collection<BlobDocument>("checkpoint_blobs");
      // As that release wrote them: no `chain`.
      await blobs.updateMany({}, { $unset: { chain: "" } });

      await setUp(db);

      const links = await blobs.find({ type: "list" }).toArray();
      const byVersion = new Map(links.map((l) => [l.version, l]));
      for (const link of links) {
        const ancestors: string[] = [];
        for (let key = link.base; key !== undefined && ancestors.length < 32; key = byVersion.get(key)?.base) ancestors.push(key);
        expect(link.chain).toEqual(ancestors);
      }
      const reader = new ThreadwiseSaver({ client: test.client, dbName: db.databaseName });
      expect(await snapshotThread(reader, "t")).toEqual(written);
      const next = scriptedGraph(reader);
      await next.invoke({ messages: [new HumanMessage("q5")] }, thread);
      await reader.prune("t");
      expect(texts((await next.getState(thread)).values.messages).filter((text) => text.startsWith("q"))).toEqual(["q1", "q2", "q3", "q4", "q5"]);
      for await (const snapshot of next.getStateHistory(thread)) expect(snapshot.values).toBeDefined();
    });
  });
});
