import { randomUUID } from "node:crypto";
import { z } from "zod";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { App } from "../../lib/app.js";
import { apiPrincipal, type Caller } from "../../lib/auth/principal.js";
import { NotFoundError } from "../../lib/errors.js";
import type { Embedder } from "../../lib/recall/embedder.js";
import { COLLECTIONS } from "../../lib/store/collections.js";
import type { ToolDefinition } from "../../lib/tools/tool.js";
import { useTestApp } from "../support/app-fixture.js";
import { Gate } from "../support/gate.js";

const caller: Caller = { principal: apiPrincipal("alice"), roles: [] };
const testApp = useTestApp("turn_deletion", { clearBeforeEach: false });
const { client, dbName } = testApp.database;
let app: App;
/** Where the tool, or the embedder of a finished turn, waits when the test holds it. */
let toolGate: Gate | undefined;
let embedGate: Gate | undefined;

const slowTool: ToolDefinition = {
  name: "slow_lookup",
  description: "Looks something up, slowly.",
  schema: z.object({ q: z.string() }),
  sideEffects: false,
  run: async ({ q }: { q: string }) => {
    await toolGate?.pass();
    return `found ${q}`;
  },
};

/** A tool a person must approve: it changes nothing here, it only has to be held. */
const heldTool: ToolDefinition = {
  name: "held_action",
  description: "Does something a person approves first.",
  schema: z.object({ what: z.string() }),
  sideEffects: true,
  run: async ({ what }: { what: string }) => `did ${what}`,
};

const embedder: Embedder = {
  modelId: "test-embedder",
  embed: async () => {
    await embedGate?.pass();
    return new Float32Array(8).fill(0.5);
  },
};

beforeAll(async () => {
  app = await testApp.appWith({ tools: [slowTool, heldTool], embedder }, (config) => {
    config.tools.approvals = { tools: { held_action: { require: "always" } }, ttlSeconds: 600 };
  });
});
afterAll(async () => {
  toolGate?.open();
  embedGate?.open();
});

/** Every document of any collection that names the conversation, by collection. */
async function leftovers(conversationId: string): Promise<Record<string, number>> {
  const found: Record<string, number> = {};
  for (const name of Object.values(COLLECTIONS)) {
    const n = await client
      .db(dbName)
      .collection(name)
      .countDocuments({ $or: [{ _id: conversationId as never }, { conversationId }, { thread_id: conversationId }] });
    if (n > 0) found[name] = n;
  }
  return found;
}

describe("TurnRunner", () => {
  describe("run of a turn whose conversation is deleted", () => {
    it("throws NotFoundError when deleted mid tool call, and leaves nothing; a retry of the turn writes nothing either", async () => {
      const { _id: conversationId } = await app.database.conversations.create(caller.principal);
      await app.runner.run({ conversationId, caller, content: "a first question", turnId: randomUUID() });
      toolGate = new Gate();
      const request = { conversationId, caller, content: 'slow_lookup {"q": "sales"}', turnId: randomUUID() };
      const running = app.runner.run(request);
      await toolGate.reached;
      await app.database.deleteConversation(conversationId);
      toolGate.open();
      await expect(running).rejects.toBeInstanceOf(NotFoundError);
      expect(await leftovers(conversationId)).toEqual({});
      await expect(app.runner.run(request)).rejects.toBeInstanceOf(NotFoundError);
      expect(await leftovers(conversationId)).toEqual({});
    });

    it("throws NotFoundError when deleted while the finished turn is indexed for recall, and leaves nothing", async () => {
      const { _id: conversationId } = await app.database.conversations.create(caller.principal);
      embedGate = new Gate();
      const request = { conversationId, caller, content: "index me", turnId: randomUUID() };
      const running = app.runner.run(request);
      await embedGate.reached;
      await app.database.deleteConversation(conversationId);
      embedGate.open();
      embedGate = undefined;
      await expect(running).rejects.toBeInstanceOf(NotFoundError);
      expect(await leftovers(conversationId)).toEqual({});
      await expect(app.runner.run(request)).rejects.toBeInstanceOf(NotFoundError);
      expect(await leftovers(conversationId)).toEqual({});
    });

    it("leaves nothing when deleted while the turn awaits approval: the decision and a redelivery are NotFound", async () => {
      const { _id: conversationId } = await app.database.conversations.create(caller.principal);
      const request = { conversationId, caller, content: 'held_action {"what": "ship"}', turnId: randomUUID() };
      const paused = await app.runner.run(request);
      expect(paused.status).toBe("awaiting_approval");
      await app.database.deleteConversation(conversationId);

      const approvalId = paused.approvals?.[0]?.approvalId ?? "";
      await expect(app.approvals.decide(conversationId, approvalId, caller, { kind: "approve" })).rejects.toBeInstanceOf(NotFoundError);
      await app.approvals.sweep({ now: new Date(Date.now() + 3_600_000) });
      await expect(app.runner.run(request)).rejects.toBeInstanceOf(NotFoundError);
      expect(await leftovers(conversationId)).toEqual({});
    });
  });
});
