import { randomBytes } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HumanMessage } from "@langchain/core/messages";
import { MongoDBSaver } from "@langchain/langgraph-checkpoint-mongodb";
import { Binary, type Db } from "mongodb";
import { isCiphertext } from "../../../lib/crypto/content-cipher.js";
import { FieldCipher } from "../../../lib/crypto/field-cipher.js";
import { LocalTenantKeys } from "../../../lib/crypto/local-tenant-keys.js";
import { ContentRefusedError, NotFoundError } from "../../../lib/errors.js";
import { ThreadwiseSaver } from "../../../lib/store/threadwise-saver.js";
import { useTestDatabase } from "../../support/store-fixture.js";
import { KEYED_DIGEST_PREFIX } from "../../../lib/store/checkpoint/checkpoint-contents.js";
import { SAVER_COLLECTIONS, checkpointWith, loopMetadata, newSaver, scriptedGraph, snapshotThread } from "./saver-support.js";

const test = useTestDatabase("reseal", { clearBeforeEach: false });
const NO_CONVERSATION = "no-conversation";
let cipher: FieldCipher;
const digestKey = randomBytes(32);

beforeAll(async () => {
  cipher = new FieldCipher({
    keys: new LocalTenantKeys(await mkdtemp(join(tmpdir(), "threadwise-reseal-"))),
    // As the database's: a thread without a conversation has no tenant.
    tenantOf: async (threadId) => {
      if (threadId === NO_CONVERSATION) throw new NotFoundError(`conversation ${threadId} has no owner whose key could be used`);
      return { issuer: "api", tenant: "acme" };
    },
  });
});

/** The saver encrypting over the same database as `clear`. */
const sealedOver = (db: Db) => new ThreadwiseSaver({ client: test.client, dbName: db.databaseName, cipher, digestKeyOf: async () => digestKey });

/** Binary values of the saver's collections that are not ciphertexts, but the versions of a header of the saver's format (no values: kept clear). */
async function clearValues(db: Db): Promise<number> {
  let n = 0;
  const walk = (value: unknown): void => {
    if (value instanceof Binary) n += isCiphertext(value) ? 0 : 1;
    else if (value !== null && typeof value === "object" && !(value instanceof Date)) Object.values(value).forEach(walk);
  };
  for (const name of SAVER_COLLECTIONS) {
    for (const doc of await db.collection(name).find({}).toArray()) walk(doc.format === 2 ? { ...doc, checkpoint: undefined } : doc);
  }
  return n;
}

/** A thread of `turns` turns written clear, with a tool call each, and one interrupted before its tools run (a pending write). */
async function clearThread(threadId: string, turns = 3): Promise<{ clear: ThreadwiseSaver; db: Db }> {
  const { saver: clear, db } = await newSaver(test);
  const graph = scriptedGraph(clear, { toolOutput: 5_000 });
  for (let i = 0; i < turns; i++) await graph.invoke({ messages: [new HumanMessage(`q${i} secret`)] }, { configurable: { thread_id: threadId } });
  await clear.prune(threadId);
  return { clear, db };
}

describe("CheckpointResealer", () => {
  describe("reseal", () => {
    it("seals every value of a thread written clear: every checkpoint reads back the same, and the thread continues on its list", async () => {
      const { clear, db } = await clearThread("t");
      const before = await snapshotThread(clear, "t");
      const sealed = sealedOver(db);
      await expect(sealed.getTuple({ configurable: { thread_id: "t" } })).rejects.toBeInstanceOf(ContentRefusedError);
      const done = await sealed.resealStoredCheckpoints((stored) => !isCiphertext(stored));
      expect(done.resealed).toBeGreaterThan(10);
      expect(done).toMatchObject({ orphaned: 0, changed: 0 });
      expect(await clearValues(db)).toBe(0);
      expect(JSON.stringify(await db.collection("checkpoint_blobs").find({}).toArray())).not.toMatch(/"(digest|content)":"[0-9a-f]{64}/);
      expect(await snapshotThread(sealed, "t")).toEqual(before);
      // Idempotent.
      expect(await sealed.resealStoredCheckpoints((stored) => !isCiphertext(stored))).toEqual({ resealed: 0, documents: 0, orphaned: 0, changed: 0 });
      // The next turn extends the list as stored: its digests were keyed.
      const roots = () => db.collection("checkpoint_blobs").countDocuments({ type: "list", base: { $exists: false } });
      const rootsBefore = await roots();
      const state = await scriptedGraph(sealed).invoke({ messages: [new HumanMessage("q3")] }, { configurable: { thread_id: "t" } });
      expect(state.messages.map((m) => String(m.content)).filter((t) => t.startsWith("answer"))).toEqual([
        "answer to q0 secret",
        "answer to q1 secret",
        "answer to q2 secret",
        "answer to q3",
      ]);
      expect(await roots()).toBe(rootsBefore);
      expect(await clearValues(db)).toBe(0);
    });

    it("seals every value again under the current key when the predicate selects them all (a rotation), reading back the same", async () => {
      const { clear, db } = await clearThread("t", 2);
      const before = await snapshotThread(clear, "t");
      const sealed = sealedOver(db);
      const first = await sealed.resealStoredCheckpoints((stored) => !isCiphertext(stored));
      const stored = await db.collection("checkpoint_writes").findOne({});
      const again = await sealed.resealStoredCheckpoints(() => true);
      expect(again.resealed).toBe(first.resealed);
      expect((await db.collection("checkpoint_writes").findOne({ _id: stored?._id }))?.value).not.toEqual(stored?.value);
      expect(await snapshotThread(sealed, "t")).toEqual(before);
    });

    it("seals a thread written by stock MongoDBSaver, which then reads back as stock wrote it", async () => {
      const { saver: clear, db } = await newSaver(test);
      const stock = new MongoDBSaver({ client: test.client, dbName: db.databaseName });
      await scriptedGraph(stock).invoke({ messages: [new HumanMessage("q0 secret")] }, { configurable: { thread_id: "s" } });
      const before = await snapshotThread(clear, "s");
      const sealed = sealedOver(db);
      await sealed.resealStoredCheckpoints((value) => !isCiphertext(value));
      expect(await clearValues(db)).toBe(0);
      expect(await snapshotThread(sealed, "s")).toEqual(before);
    });

    it("seals a channel value stored as a blob and keys its content digest, so that putting it again is a no-op", async () => {
      const { saver: clear, db } = await newSaver(test);
      const summary = `${"s".repeat(5_000)} secret`;
      const checkpoint = checkpointWith({ summary }, { summary: 1 });
      await clear.put({ configurable: { thread_id: "b", checkpoint_ns: "" } }, checkpoint, loopMetadata, { summary: 1 });
      const sealed = sealedOver(db);
      await sealed.resealStoredCheckpoints((stored) => !isCiphertext(stored));
      const blob = await db.collection("checkpoint_blobs").findOne({ channel: "summary" });
      expect(isCiphertext(blob?.blob)).toBe(true);
      expect(String(blob?.content).startsWith(KEYED_DIGEST_PREFIX)).toBe(true);
      expect((await sealed.getTuple({ configurable: { thread_id: "b" } }))?.checkpoint.channel_values.summary).toBe(summary);
      await sealed.put({ configurable: { thread_id: "b", checkpoint_ns: "" } }, checkpoint, loopMetadata, { summary: 1 });
      expect(await db.collection("checkpoint_blobs").countDocuments({ channel: "summary" })).toBe(1);
    });

    it("leaves a thread without a conversation as it is, and counts it", async () => {
      const { db } = await clearThread(NO_CONVERSATION, 1);
      const clearBefore = await clearValues(db);
      const done = await sealedOver(db).resealStoredCheckpoints((stored) => !isCiphertext(stored));
      expect(done.resealed).toBe(0);
      expect(done.orphaned).toBeGreaterThan(0);
      expect(await clearValues(db)).toBe(clearBefore);
    });

    it("does nothing with encryption off", async () => {
      const { clear, db } = await clearThread("t", 1);
      const clearBefore = await clearValues(db);
      expect(await clear.resealStoredCheckpoints(() => true)).toEqual({ resealed: 0, documents: 0, orphaned: 0, changed: 0 });
      expect(await clearValues(db)).toBe(clearBefore);
    });
  });
});
