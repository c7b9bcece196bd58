import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { BaseMessage } from "@langchain/core/messages";
import type { App } from "../../lib/app.js";
import { countMessageTokens, TOKEN_COUNT_KEY } from "../../lib/model-view/index.js";
import { COLLECTIONS } from "../../lib/store/collections.js";
import type { Caller } from "../../lib/auth/principal.js";
import { useTestApp } from "../support/app-fixture.js";
import { bigReport } from "../support/test-tools.js";
import { apiPrincipal } from "../../lib/auth/principal.js";

const caller: Caller = { principal: apiPrincipal("alice", "acme"), roles: [] };
const testApp = useTestApp("runner", { clearBeforeEach: false, app: { tools: [bigReport] } });
const { client: inspector, dbName } = testApp.database;

/** A new client and a newly compiled graph, as a fresh Lambda container would have. */
async function freshApp(): Promise<App> {
  return testApp.appWith({ mongoClient: await testApp.newClient() });
}

describe("TurnRunner", () => {
  describe("run", () => {
    it("rehydrates the thread from MongoDB with a new client and a newly compiled graph", async () => {
      const first = await freshApp();
      const { _id: conversationId } = await first.database.conversations.create(caller.principal);
      await first.runner.run({ conversationId, caller, content: "My name is Ada.", turnId: randomUUID() });

      const second = await freshApp();
      expect(second.runner).not.toBe(first.runner);
      const result = await second.runner.run({ conversationId, caller, content: "What is my name?", turnId: randomUUID() });
      expect(result.answer).toBe("Your name is Ada.");
    });

    it("keeps the application record apart from the checkpoints: tool exchanges only in the latter", async () => {
      const app = await freshApp();
      const { _id: conversationId } = await app.database.conversations.create(caller.principal);
      const result = await app.runner.run({ conversationId, caller, content: 'big_report {"rows": 3}', turnId: randomUUID() });
      expect(result.answer).toContain("region-2");

      const record = await inspector.db(dbName).collection(COLLECTIONS.messages).find({ conversationId }).toArray();
      expect(record.map((m) => m.role)).toEqual(["user", "assistant"]);

      const thread = await app.database.checkpointer.getTuple({ configurable: { thread_id: conversationId } });
      const types = (thread!.checkpoint.channel_values.messages as { getType(): string }[]).map((m) => m.getType());
      expect(types).toEqual(["human", "ai", "tool", "ai"]);
      // Every message enters the state with its token count, so a new container need not tokenize the thread again.
      for (const m of thread!.checkpoint.channel_values.messages as BaseMessage[]) {
        expect((m.response_metadata as Record<string, unknown>)[TOKEN_COUNT_KEY], m.getType()).toBe(countMessageTokens(m));
      }
    });

    it("returns the recorded result when a completed turn is run again with the same id", async () => {
      const app = await freshApp();
      const { _id: conversationId } = await app.database.conversations.create(caller.principal);
      const turnId = randomUUID();
      const once = await app.runner.run({ conversationId, caller, content: "hello", turnId });
      const twice = await app.runner.run({ conversationId, caller, content: "hello", turnId });
      expect(twice).toEqual(once);
      const record = await app.database.messages.list(conversationId);
      expect(record).toHaveLength(2);
    });
  });

  describe("logs", () => {
    it("logs each model call as numbers, never the message contents", async () => {
      const entries: { message: string; fields: Record<string, unknown> }[] = [];
      const capture = (message: string, fields: Record<string, unknown>) => entries.push({ message, fields });
      const app = await testApp.appWith({ mongoClient: await testApp.newClient(), logger: { info: capture, warn: capture, error: capture } });
      const { _id: conversationId } = await app.database.conversations.create(caller.principal);
      const secret = "the launch code is swordfish";
      await app.runner.run({ conversationId, caller, content: `${secret} big_report {"rows": 2}`, turnId: randomUUID() });

      const calls = entries.filter((e) => e.message === "model call");
      expect(calls).toHaveLength(2);
      for (const { fields } of calls) {
        expect(fields.viewTokens).toBeGreaterThan(0);
        expect(fields.stateTokens).toBeGreaterThan(0);
        expect(fields.inputTokens).toBeGreaterThan(0);
        expect(Object.values(fields).every((v) => typeof v === "number" || (typeof v === "string" && v === fields.turnId))).toBe(true);
      }
      expect(JSON.stringify(entries)).not.toContain("swordfish");
      expect(JSON.stringify(entries)).not.toContain("region-1");
    });
  });

  describe("deleteConversation", () => {
    it("leaves nothing of the conversation in any collection", async () => {
      const app = await freshApp();
      const { _id: conversationId } = await app.database.conversations.create(caller.principal);
      await app.runner.run({ conversationId, caller, content: 'big_report {"rows": 4000}', turnId: randomUUID() });
      await app.runner.run({ conversationId, caller, content: "thanks", turnId: randomUUID() });
      const db = inspector.db(dbName);
      const mentions = async () => {
        let n = 0;
        for (const name of Object.values(COLLECTIONS)) {
          n += await db.collection(name).countDocuments({ $or: [{ _id: conversationId as never }, { conversationId }, { thread_id: conversationId }] });
        }
        return n;
      };
      expect(await mentions()).toBeGreaterThan(5);
      await app.database.deleteConversation(conversationId);
      expect(await mentions()).toBe(0);
    });
  });
});
