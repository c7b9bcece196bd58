import { randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp, type App } from "../../lib/app.js";
import { loadConfig } from "../../lib/config/config.js";
import { COLLECTIONS } from "../../lib/store/collections.js";
import { RecallIndexStore, type RecallTurnDocument } from "../../lib/store/recall-index-store.js";
import { apiPrincipal, type Caller } from "../../lib/auth/index.js";
import { dropKnownCollections } from "../support/drop-collections.js";
import { mongoUri } from "../support/mongo.js";
import { bigReport } from "../support/test-tools.js";

const alice: Caller = { principal: apiPrincipal("alice"), roles: [] };
const dbName = `recall_store_${randomUUID().slice(0, 8)}`;
let client: MongoClient;
let app: App;

beforeAll(async () => {
  client = new MongoClient(mongoUri());
  await client.connect();
  app = await createApp(loadConfig({ MONGODB_URI: mongoUri(), MONGODB_DB: dbName, VIEW_TOOL_OUTPUT_TOKENS: "500" }), {
    mongoClient: client,
    authenticate: async () => alice,
    tools: [bigReport],
  });
});
afterAll(async () => {
  await dropKnownCollections(client.db(dbName));
  await client.close();
});

async function run(conversationId: string, content: string): Promise<string> {
  const turnId = randomUUID();
  await app.runner.run({ conversationId, caller: alice, content, turnId });
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
      const failed = randomUUID();
      await app.database.turns.start(failed, conversationId);
      await app.database.messages.append({ conversationId, turnId: failed, role: "user", content: "Budget owner is Priya." });
      await app.database.turns.fail(failed, { code: "Error", message: "the turn failed" });
      const next = await run(conversationId, "Hello again.");
      const records = await app.database.recall.records(conversationId, [failed, next]);
      expect(records.map((r) => [r.turnNumber, r.status, r.answer]).sort()).toEqual([
        [1, "failed", ""],
        [2, "completed", expect.stringContaining("Hello again.")],
      ]);
    });

    it("adds a turn once, however often it is added", async () => {
      const store = new RecallIndexStore(client.db(dbName), { segmentTurns: 2 });
      for (const n of [1, 2, 2, 3, 1]) await store.add(record("once", n), { length: 1, terms: new Map([["x", 1]]) });
      expect((await store.entries("once")).map((e) => e.turnNumber)).toEqual([1, 2, 3]);
      expect(await client.db(dbName).collection(COLLECTIONS.recallIndex).countDocuments({ conversationId: "once" })).toBe(2);
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
