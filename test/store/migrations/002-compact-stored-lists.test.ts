import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { JsonPlusSerializer } from "@langchain/langgraph-checkpoint";
import { BSON, Binary, type Db } from "mongodb";
import { EMPTY_LIST_DIGEST, nextDigest, type SerializedItem } from "../../../lib/store/checkpoint/list-links.js";
import type { BlobDocument } from "../../../lib/store/checkpoint/channel-blob-store.js";
import { COLLECTIONS } from "../../../lib/store/collections.js";
import { ThreadwiseDatabase } from "../../../lib/store/database.js";
import { ThreadwiseSaver } from "../../../lib/store/threadwise-saver.js";
import { useTestDatabase } from "../../support/store-fixture.js";
import { SAVER_COLLECTIONS, newSaver, scriptedGraph, snapshotThread } from "../checkpoint/saver-support.js";

// Each test makes its checkpointer on a database of its own (`newSaver`); this one holds the client.
const test = useTestDatabase("compaction", { clearBeforeEach: false });

const thread = { configurable: { thread_id: "t" } };
const serde = new JsonPlusSerializer();
const LIMIT = 256 * 1024;

async function sizes(db: Db): Promise<{ total: number; largest: number }> {
  let total = 0;
  let largest = 0;
  for (const name of SAVER_COLLECTIONS) {
    for await (const doc of db.collection(name).find({})) {
      const size = BSON.calculateObjectSize(doc);
      total += size;
      largest = Math.max(largest, size);
    }
  }
  return { total, largest };
}

/**
 * Rewrites a thread's message list as the release before issue 28 left it: every version a
 * checkpoint names stored whole (no `base`, one document however large), its items serialized as
 * that release serialized them, `dumpsTyped` of the messages as the graph held them, so that an
 * `AIMessage` new in a version carries `name: undefined` as `ChatBedrockConverse` builds it
 * (`{"lc":2,"type":"undefined"}`) and is stored without it in every later copy.
 */
async function rewriteAsWholeCopies(db: Db): Promise<void> {
  const blobs = db.collection<BlobDocument>("checkpoint_blobs");
  const links = await blobs.find({ type: "list" }).toArray();
  const byVersion = new Map(links.map((l) => [l.version, l]));
  const heads = links.filter((l) => !l.version.includes("#"));
  const whole: BlobDocument[] = [];
  for (const head of heads) {
    const chain: BlobDocument[] = [];
    for (let link: BlobDocument | undefined = head; link; link = link.base === undefined ? undefined : byVersion.get(link.base)) chain.unshift(link);
    const own = new Set((head.items ?? []).map((_, i) => (head.count ?? 0) - (head.items ?? []).length + i));
    const items: SerializedItem[] = [];
    let index = 0;
    for (const link of chain) {
      for (const [i, bytes] of (link.items ?? []).entries()) {
        let message = await serde.loadsTyped((link.item_types ?? [])[i] ?? "json", bytes.buffer);
        if (own.has(index) && AIMessage.isInstance(message)) message = new AIMessage({ ...message.lc_kwargs, name: undefined });
        const [type, dumped] = await serde.dumpsTyped(message);
        items.push({ type, bytes: dumped });
        index++;
      }
    }
    const digest = items.reduce((d, item) => nextDigest(d, item), EMPTY_LIST_DIGEST);
    const { _id, base: _base, chain: _chain, ...fields } = head as BlobDocument & { _id: unknown };
    whole.push({
      ...fields,
      content: `${digest}:${items.length}`,
      count: items.length,
      digest,
      items: items.map((item) => new Binary(item.bytes)),
      item_types: items.map((item) => item.type),
      bytes: items.reduce((sum, item) => sum + item.bytes.byteLength, 0),
    });
  }
  await blobs.deleteMany({ type: "list" });
  await blobs.insertMany(whole);
}

describe("migration 002 compact-stored-lists", () => {
  describe("up (run by ThreadwiseDatabase.setup, npm run db:setup)", () => {
    it("rewrites a thread stored as whole copies of its list into bounded links, every checkpoint reading the same messages", async () => {
      const { saver, db } = await newSaver(test);
      const graph = scriptedGraph(saver, { toolOutput: 20_000 });
      for (let turn = 1; turn <= 14; turn++) await graph.invoke({ messages: [new HumanMessage(`question ${turn}`)] }, thread);
      await saver.prune("t");
      const written = await snapshotThread(saver, "t");
      await rewriteAsWholeCopies(db);
      const old = new ThreadwiseSaver({ client: test.client, dbName: db.databaseName });
      // The fixture is the old form: whole copies, the last over the limit, and still read the same.
      const before = await sizes(db);
      expect(before.largest).toBeGreaterThan(LIMIT);
      expect(await db.collection("checkpoint_blobs").countDocuments({ type: "list", base: { $exists: true } })).toBe(0);
      expect(await snapshotThread(old, "t")).toEqual(written);
      // As Bedrock's messages were stored when new: the same message, other bytes, in later copies.
      const stored = await db.collection<BlobDocument>("checkpoint_blobs").find({ type: "list" }).toArray();
      expect(stored.some((d) => (d.items ?? []).some((b) => Buffer.from(b.buffer).toString().includes('"type":"undefined"')))).toBe(true);

      // The step of `npm run db:setup` (and of the deploy's set-up function), once per database.
      await new ThreadwiseDatabase(test.client, { dbName: db.databaseName }).setup();
      expect(await db.collection(COLLECTIONS.setup).findOne({ _id: "schema" as never })).toMatchObject({
        schemaVersion: 2,
        applied: expect.objectContaining({ "002": expect.objectContaining({ name: "compact-stored-lists" }) }),
      });

      const after = await sizes(db);
      expect(after.largest).toBeLessThan(LIMIT);
      expect(after.total).toBeLessThan(before.total / 3);
      const fresh = new ThreadwiseSaver({ client: test.client, dbName: db.databaseName });
      expect(await snapshotThread(fresh, "t")).toEqual(written);
      const state = await scriptedGraph(fresh).getState(thread);
      expect(state.values.messages).toHaveLength(14 * 4);

      // Compacted again: nothing left to do.
      expect((await fresh.compactStoredLists()).rewritten).toBe(0);
      // The next turn extends the compacted list: its new version stores only what it appended.
      await scriptedGraph(fresh, { toolOutput: 20_000 }).invoke({ messages: [new HumanMessage("question 15")] }, thread);
      const newest = await db.collection<BlobDocument>("checkpoint_blobs").find({ type: "list" }).sort({ count: -1 }).limit(1).next();
      expect(newest?.count).toBe(15 * 4);
      expect(newest?.base).toBeDefined();
      expect((await sizes(db)).total - after.total).toBeLessThan(80_000);
    });
  });
});
