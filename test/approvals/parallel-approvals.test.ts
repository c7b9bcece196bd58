import { randomUUID } from "node:crypto";
import { z } from "zod";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createApp, type App } from "../../lib/app.js";
import { apiPrincipal, type Caller } from "../../lib/auth/principal.js";
import { loadConfig } from "../../lib/config/config.js";
import { apiTurnJob } from "../../lib/queue/turn-dispatcher.js";
import type { ToolDefinition } from "../../lib/tools/tool.js";
import { lastUserText, startConverseEndpoint, type ConverseEndpoint, type ConverseRequest } from "../support/converse-endpoint.js";
import { useTestDatabase } from "../support/store-fixture.js";

const MODEL_ID = "us.anthropic.claude-sonnet-4-20250514-v1:0";
const alice: Caller = { principal: apiPrincipal("alice"), roles: [] };

let converse: ConverseEndpoint;
const database = useTestDatabase("parallel_approvals", { clearBeforeEach: false });
const apps: App[] = [];

const recordEffect: ToolDefinition = {
  name: "record_effect",
  description: "Records an effect.",
  schema: z.object({ note: z.string().min(1) }),
  sideEffects: true,
  run: async ({ note }: { note: string }, ctx) => {
    await database.db.collection("follow_ups").insertOne({ conversationId: ctx.conversationId, note });
    return `recorded ${note}`;
  },
};
const lookUp: ToolDefinition = {
  name: "look_up",
  description: "Reads something.",
  schema: z.object({ key: z.string() }),
  sideEffects: false,
  run: async ({ key }: { key: string }) => `value of ${key}`,
};

/** Three calls in one response (two held, one read-only), then an answer naming every result. */
function respond(request: ConverseRequest) {
  const last = request.messages[request.messages.length - 1];
  const results = last.content.flatMap((b) => ("toolResult" in b && b.toolResult ? [b.toolResult] : []));
  if (results.length > 0) return { text: `Results: ${results.map((r) => JSON.stringify(r.content)).join(" | ")}` };
  if (lastUserText(request).includes("three")) {
    return {
      toolUses: [
        { name: "record_effect", input: { note: "first" } },
        { name: "record_effect", input: { note: "second" } },
        { name: "look_up", input: { key: "k" } },
      ],
    };
  }
  return { text: "ok" };
}

beforeAll(async () => {
  converse = await startConverseEndpoint({ respond });
  for (const [name, value] of Object.entries(converse.environment)) vi.stubEnv(name, value);
});

afterAll(async () => {
  await Promise.all(apps.map((app) => app.close()));
  await converse?.close();
  vi.unstubAllEnvs();
});

async function bedrockApp(): Promise<App> {
  const config = loadConfig({ MONGODB_URI: "mongodb://unused", MONGODB_DB: database.dbName, MODEL_PROVIDER: "bedrock", BEDROCK_MODEL_ID: MODEL_ID });
  config.tools.approvals = { tools: { record_effect: { require: "always" } }, ttlSeconds: 600 };
  const app = await createApp(config, { mongoClient: database.client, tools: [recordEffect, lookUp] });
  apps.push(app);
  return app;
}

const notes = async (conversationId: string) =>
  (await database.db.collection("follow_ups").find({ conversationId }).toArray()).map((e) => e.note as string).sort();

describe("Approvals", () => {
  describe("decide on parallel calls of one model response", () => {
    it("holds every held call under its own id and resumes only after the last decision", async () => {
      const app = await bedrockApp();
      const { _id: conversationId } = await app.database.conversations.create(alice.principal);
      const turn = { conversationId, caller: alice, content: "do three things", turnId: randomUUID() };
      const result = await app.runner.run({ ...turn, origin: apiTurnJob(turn) });

      expect(result.status).toBe("awaiting_approval");
      const ids = result.approvals!.map((a) => a.approvalId);
      expect(new Set(ids).size).toBe(2);
      expect(result.approvals!.map((a) => a.args)).toEqual([{ note: "first" }, { note: "second" }]);

      const first = await app.approvals.decide(conversationId, ids[0], alice, { kind: "approve" });
      expect(first.resumed).toBe(false);
      // Approved, but the turn still waits: nothing runs before every call is decided.
      expect(await notes(conversationId)).toEqual([]);
      expect((await app.database.turns.get(turn.turnId))?.status).toBe("awaiting_approval");

      const second = await app.approvals.decide(conversationId, ids[1], alice, { kind: "edit", args: { note: "second, edited" } });
      expect(second.resumed).toBe(true);

      expect(await notes(conversationId)).toEqual(["first", "second, edited"]);
      const done = await app.database.turns.get(turn.turnId);
      expect(done?.status).toBe("completed");
      expect(done?.answer).toContain("value of k");
      // The model's next request carries the edited call, not the one it first made, each answered once.
      const sent = converse.requests.at(-1)!.body!;
      const uses = sent.messages.flatMap((m) => m.content.flatMap((b) => ("toolUse" in b && b.toolUse ? [b.toolUse.input] : [])));
      expect(uses).toEqual([{ note: "first" }, { note: "second, edited" }, { key: "k" }]);
    });

    it("answers a repeated decision on one call as the first, while the other still waits", async () => {
      const app = await bedrockApp();
      const { _id: conversationId } = await app.database.conversations.create(alice.principal);
      const turn = { conversationId, caller: alice, content: "do three things", turnId: randomUUID() };
      const result = await app.runner.run({ ...turn, origin: apiTurnJob(turn) });
      const [a, b] = result.approvals!.map((x) => x.approvalId);

      await app.approvals.decide(conversationId, a, alice, { kind: "reject", reason: "no" });
      const again = await app.approvals.decide(conversationId, a, alice, { kind: "reject", reason: "no" });
      expect(again).toMatchObject({ decided: false, resumed: false });
      await app.approvals.decide(conversationId, b, alice, { kind: "approve" });

      expect(await notes(conversationId)).toEqual(["second"]);
      expect((await app.database.turns.get(turn.turnId))?.answer).toContain("alice rejected this call, saying: no");
    });
  });
});
