import { randomUUID } from "node:crypto";
import { BSON, Binary, MongoClient } from "mongodb";
import { beforeAll, describe, expect, it } from "vitest";
import type { App } from "../../lib/app.js";
import { StaleWriterError } from "../../lib/errors.js";
import { cosine } from "../../lib/recall/embedder.js";
import { COLLECTIONS } from "../../lib/store/collections.js";
import { RecallIndexStore, type RecallTurnDocument } from "../../lib/store/recall-index-store.js";
import { apiPrincipal, type Caller } from "../../lib/auth/index.js";
import { useTestApp } from "../support/app-fixture.js";
import { heldFence, lostFence } from "../support/fences.js";
import { mongoUri } from "../support/mongo.js";
import { bigReport } from "../support/test-tools.js";

const alice: Caller = { principal: apiPrincipal("alice"), roles: [] };
const testApp = useTestApp("recall_store", { clearBeforeEach: false, env: { VIEW_TOOL_OUTPUT_TOKENS: "500" } });
const { client, dbName } = testApp.database;
let app: App;

beforeAll(async () => {
  app = await testApp.appWith({ tools: [bigReport] });
});

async function run(conversationId: string, content: string): Promise<string> {
  const turnId = randomUUID();
  await app.runner.run({ conversationId, caller: alice, content, turnId });
  return turnId;
}

/** A turn that asked its question and ended without an answer, recorded as the turn runner records it, under the lease. */
async function askAndEnd(conversationId: string, question: string, end: "failed" | "superseded"): Promise<string> {
  const turnId = randomUUID();
  const { lease, turns, messages } = app.database;
  const fence = await lease.acquire(conversationId, turnId);
  const claim = await turns.claim(turnId, fence);
  if (!claim.claimed) throw new Error("a new turn is claimed");
  const seq = await turns.begin(claim.turn, fence, alice.principal);
  await messages.append({ turnId, seq, role: "user", content: question }, fence);
  if (end === "failed") await turns.fail(claim.turn, { code: "internal_error", message: "the turn failed" }, fence);
  else await turns.supersede(claim.turn, fence);
  await lease.release(fence);
  return turnId;
}

function record(conversationId: string, turnNumber: number): RecallTurnDocument {
  return { _id: `${conversationId}-${turnNumber}`, conversationId, turnNumber, at: new Date(), status: "completed", question: "q", answer: "a", tools: [] };
}

describe("RecallIndexStore", () => {
  describe("add", () => {
    it("returns each finished turn in order with its question, answer, and tool call with the start of its output", async () => {
      const { _id: conversationId } = await app.database.conversations.create(alice.principal);
      const first = await run(conversationId, "My name is Ada.");
      const second = await run(conversationId, 'big_report {"rows": 400}');
      const entries = await app.database.recall.entries(conversationId);
      expect(entries.map((e) => [e.turnNumber, e.turnId])).toEqual([
        [1, first],
        [2, second],
      ]);
      expect(entries[0].terms.has("ada")).toBe(true);
      const [report] = await app.database.recall.records(conversationId, [second]);
      expect(report).toMatchObject({ turnNumber: 2, status: "completed", question: 'big_report {"rows": 400}' });
      expect(report.tools.map((t) => [t.name, t.args])).toEqual([
        ["big_report", '{"rows":400}'],
        ["read_tool_output", expect.stringMatching(/^\{"handle":"art_[0-9a-f]{24}"/)],
      ]);
      expect(report.tools[0].preview).toMatch(/^\[Output of tool "big_report" not shown/);
      expect(report.tools[1].preview).toContain("| 1 | region-0 |");
    });

    it("returns a failed turn too, indexed with the turn after it", async () => {
      const { _id: conversationId } = await app.database.conversations.create(alice.principal);
      const failed = await askAndEnd(conversationId, "Budget owner is Priya.", "failed");
      const next = await run(conversationId, "Hello again.");
      const records = await app.database.recall.records(conversationId, [failed, next]);
      expect(records.map((r) => [r.turnNumber, r.status, r.answer]).sort()).toEqual([
        [1, "failed", ""],
        [2, "completed", expect.stringContaining("Hello again.")],
      ]);
    });

    it("skips a superseded turn, which has no answer of its own, and indexes the turns after it", async () => {
      const { _id: conversationId } = await app.database.conversations.create(alice.principal);
      const superseded = await askAndEnd(conversationId, "Overtaken question.", "superseded");
      const next = await run(conversationId, "Hello again.");
      const records = await app.database.recall.records(conversationId, [superseded, next]);
      expect(records.map((r) => [r._id, r.turnNumber, r.status])).toEqual([[next, 1, "completed"]]);
    });

    it("adds a turn once, however often it is added", async () => {
      const store = new RecallIndexStore(client.db(dbName), { segmentTurns: 2 });
      for (const n of [1, 2, 2, 3, 1]) await store.add(record("once", n), { length: 1, terms: new Map([["x", 1]]) }, heldFence("once"));
      expect((await store.entries("once")).map((e) => e.turnNumber)).toEqual([1, 2, 3]);
      expect(await client.db(dbName).collection(COLLECTIONS.recallIndex).countDocuments({ conversationId: "once" })).toBe(2);
    });

    it("writes each index document once, so what a turn writes does not grow with the conversation", async () => {
      // Every write command sent to recall_index, by the _id it wrote, and its bytes.
      const monitored = new MongoClient(mongoUri(), { monitorCommands: true });
      await monitored.connect();
      const writes = new Map<string, number>();
      const bytesByTurn: number[] = [];
      let turnBytes = 0;
      monitored.on("commandStarted", (event) => {
        const command = event.command as {
          insert?: string;
          update?: string;
          documents?: { _id: string }[];
          updates?: { q: { _id?: unknown }; u: { _id?: string } }[];
        };
        if (command.insert === COLLECTIONS.recallIndex) for (const doc of command.documents ?? []) writes.set(doc._id, (writes.get(doc._id) ?? 0) + 1);
        if (command.update === COLLECTIONS.recallIndex)
          for (const u of command.updates ?? []) writes.set(String(u.u._id ?? u.q._id), (writes.get(String(u.u._id ?? u.q._id)) ?? 0) + 1);
        if (command.insert === COLLECTIONS.recallIndex || command.update === COLLECTIONS.recallIndex) turnBytes += BSON.calculateObjectSize(event.command);
      });
      try {
        const store = new RecallIndexStore(monitored.db(dbName), { segmentTurns: 10 });
        const terms = new Map(Array.from({ length: 40 }, (_, i) => [`term${i}`, 1 + (i % 3)]));
        for (let n = 1; n <= 35; n++) {
          turnBytes = 0;
          await store.add(record("flat", n), { length: 60, terms, vector: Float32Array.from({ length: 64 }, (_, i) => Math.cos(i + n)) }, heldFence("flat"));
          bytesByTurn.push(turnBytes);
        }
        expect(
          [...writes.values()].every((count) => count === 1),
          JSON.stringify([...writes]),
        ).toBe(true);
        // A turn that does not complete a segment writes its entry only, late in a segment as early in the first.
        const single = bytesByTurn.filter((_, i) => (i + 1) % 10 !== 0);
        expect(Math.max(...single)).toBeLessThan(1.1 * Math.min(...single));
        // The turn that completes one writes its entry and the segment, bounded by the segment.
        for (const i of [9, 19, 29]) expect(bytesByTurn[i]).toBeLessThan(12 * Math.min(...single));
        expect((await store.entries("flat")).map((e) => e.turnNumber)).toEqual(Array.from({ length: 35 }, (_, i) => i + 1));
        // Three packed segments and the open one's five entries.
        expect(await monitored.db(dbName).collection(COLLECTIONS.recallIndex).countDocuments({ conversationId: "flat" })).toBe(3 + 5);
      } finally {
        await monitored.close();
      }
    });

    it("reads a segment written whole by an earlier release and packs the turns added to it", async () => {
      const store = new RecallIndexStore(client.db(dbName), { segmentTurns: 4 });
      await store.add(record("legacy", 1), { length: 1, terms: new Map([["x", 1]]) }, heldFence("legacy"));
      // As earlier releases wrote it: the open segment as one document `${conversationId}:${segment}`.
      const collection = client.db(dbName).collection<{ _id: string }>(COLLECTIONS.recallIndex);
      const single = await collection.findOne({ conversationId: "legacy" });
      await collection.deleteMany({ conversationId: "legacy" });
      await collection.insertOne({ ...single, _id: "legacy:0" });
      for (const n of [2, 3, 4, 5]) await store.add(record("legacy", n), { length: 1, terms: new Map([["x", 1]]) }, heldFence("legacy"));
      expect((await store.entries("legacy")).map((e) => e.turnId)).toEqual([1, 2, 3, 4, 5].map((n) => `legacy-${n}`));
      expect((await collection.find({ conversationId: "legacy" }).toArray()).map((d) => d._id).sort()).toEqual(["legacy:0", "legacy:1:legacy-5"]);
    });

    it("stores a vector as a BSON int8 vector and returns one pointing the same way", async () => {
      const store = new RecallIndexStore(client.db(dbName));
      const vector = Float32Array.from({ length: 512 }, (_, i) => Math.sin(i * 1.7) / 16);
      await store.add(record("int8", 1), { length: 1, terms: new Map([["x", 1]]), vector }, heldFence("int8"));
      const [segment] = await client.db(dbName).collection(COLLECTIONS.recallIndex).find({ conversationId: "int8" }).toArray();
      expect(segment.vectors[0]).toMatchObject({ sub_type: Binary.SUBTYPE_VECTOR });
      // A two-byte header (dtype, padding), then one byte per dimension.
      expect(segment.vectors[0].length()).toBe(2 + 512);
      const [entry] = await store.entries("int8");
      expect(entry.vector).toHaveLength(512);
      expect(cosine(entry.vector as Float32Array, vector)).toBeGreaterThan(0.9999);
    });

    it("returns a vector written as raw float32 bytes, as the index stored it before int8 vectors", async () => {
      const store = new RecallIndexStore(client.db(dbName));
      await store.add(record("float32", 1), { length: 1, terms: new Map([["x", 1]]) }, heldFence("float32"));
      const vector = Float32Array.from([0.6, -0.8, 0]);
      await client
        .db(dbName)
        .collection(COLLECTIONS.recallIndex)
        .updateOne({ conversationId: "float32" }, { $set: { vectors: [new Binary(Buffer.from(vector.buffer))] } });
      expect((await store.entries("float32"))[0].vector).toEqual(vector);
    });

    it("writes the record and its segment with the fence's expiry", async () => {
      const store = new RecallIndexStore(client.db(dbName));
      const fence = heldFence("expiring");
      await store.add(record("expiring", 1), { length: 1, terms: new Map([["x", 1]]) }, fence);
      for (const name of [COLLECTIONS.recallTurns, COLLECTIONS.recallIndex]) {
        const docs = await client.db(dbName).collection(name).find({ conversationId: "expiring" }).toArray();
        expect(
          docs.map((d) => d.expiresAt),
          name,
        ).toEqual([fence.expiresAt]);
      }
    });

    it("throws StaleWriterError and leaves the index as it was when the fence is lost", async () => {
      const store = new RecallIndexStore(client.db(dbName), { segmentTurns: 2 });
      await store.add(record("fenced", 1), { length: 1, terms: new Map([["x", 1]]) }, heldFence("fenced"));
      const before = await store.entries("fenced");
      await expect(store.add(record("fenced", 2), { length: 1, terms: new Map([["y", 1]]) }, lostFence("fenced"))).rejects.toBeInstanceOf(StaleWriterError);
      await expect(store.add(record("fenced", 3), { length: 1, terms: new Map([["z", 1]]) }, lostFence("fenced"))).rejects.toBeInstanceOf(StaleWriterError);
      expect(await store.entries("fenced")).toEqual(before);
      expect(await store.records("fenced", ["fenced-1", "fenced-2", "fenced-3"])).toHaveLength(1);
    });
  });

  describe("deleteByConversation", () => {
    it("leaves nothing of the conversation's index when the conversation is deleted, and other conversations' untouched", async () => {
      const { _id: gone } = await app.database.conversations.create(alice.principal);
      const { _id: kept } = await app.database.conversations.create(alice.principal);
      await run(gone, "My name is Ada.");
      await run(kept, "My name is Grace.");
      await app.database.deleteConversation(gone);
      for (const name of [COLLECTIONS.recallTurns, COLLECTIONS.recallIndex]) {
        expect(await client.db(dbName).collection(name).countDocuments({ conversationId: gone }), name).toBe(0);
        expect(await client.db(dbName).collection(name).countDocuments({ conversationId: kept }), name).toBe(1);
      }
    });
  });
});
