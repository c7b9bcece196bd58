import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ThreadReader } from "../../lib/agent/thread-reader.js";
import { createApp, type App } from "../../lib/app.js";
import { apiPrincipal, type Caller } from "../../lib/auth/principal.js";
import { loadConfig } from "../../lib/config/config.js";
import { useTestDatabase } from "../support/store-fixture.js";
import { mongoUri } from "../support/mongo.js";
import { bigReport } from "../support/test-tools.js";

const caller: Caller = { principal: apiPrincipal("alice", "acme"), roles: [] };
/** The app's own graph (the runner's), which the reader reads through. */
const graphOf = (app: App) => app.runner["deps"].graph;
const database = useTestDatabase("thread_reader", { clearBeforeEach: false });
let app: App;
beforeAll(async () => {
  // Outputs over 300 tokens are offloaded, so the thread holds a preview and where the output lives.
  const config = loadConfig({ MONGODB_URI: mongoUri(), MONGODB_DB: database.dbName, TOOL_OUTPUT_TOKENS: "300" });
  app = await createApp(config, { mongoClient: database.client, tools: [bigReport] });
});
afterAll(() => app.close());

describe("ThreadReader", () => {
  describe("readWorkingSet", () => {
    it("returns the thread's messages with their ids and tokens, an offloaded output with its artifact", async () => {
      const { _id: conversationId } = await app.database.conversations.create(caller.principal);
      const turnId = randomUUID();
      await app.runner.run({ conversationId, caller, content: 'big_report {"rows": 200}', turnId });
      const reader = new ThreadReader(graphOf(app), app.database.archive);
      const { messages, archivedTurns } = await reader.readWorkingSet(conversationId);
      expect(archivedTurns).toBe(0);
      expect(messages.map((m) => m.role).slice(0, 3)).toEqual(["user", "assistant", "tool"]);
      expect(messages[0]).toMatchObject({ id: `${turnId}:user`, content: 'big_report {"rows": 200}' });
      expect(messages.every((m) => m.tokens > 0)).toBe(true);
      expect(messages[2].artifact).toMatchObject({ handle: expect.any(String), bytes: expect.any(Number) });
      expect(await reader.readThread(conversationId)).toEqual(messages);
    });

    it("returns nothing for a conversation without a checkpoint", async () => {
      const { _id: conversationId } = await app.database.conversations.create(caller.principal);
      const reader = new ThreadReader(graphOf(app));
      expect(await reader.readWorkingSet(conversationId)).toEqual({ messages: [], archivedTurns: 0 });
      expect(await reader.readThreadState(conversationId)).toBeUndefined();
      expect(await reader.readArchive(conversationId, 1, 5)).toEqual([]);
    });
  });

  describe("readThreadHistory", () => {
    it("returns the checkpoints newest first, the latest being readThreadState's, and pages with before", async () => {
      const { _id: conversationId } = await app.database.conversations.create(caller.principal);
      await app.runner.run({ conversationId, caller, content: "hello", turnId: randomUUID() });
      const reader = new ThreadReader(graphOf(app));
      const history = [];
      for await (const snapshot of reader.readThreadHistory(conversationId)) history.push(snapshot);
      expect(history.length).toBeGreaterThan(1);
      expect(history[0]).toEqual(await reader.readThreadState(conversationId));
      expect(history[0].next).toEqual([]);
      expect(history[0].parentCheckpointId).toBe(history[1].checkpointId);
      const older = [];
      for await (const snapshot of reader.readThreadHistory(conversationId, { before: history[0].checkpointId, limit: 1 })) older.push(snapshot);
      expect(older.map((s) => s.checkpointId)).toEqual([history[1].checkpointId]);
    });
  });
});
