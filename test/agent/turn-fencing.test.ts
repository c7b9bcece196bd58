import { randomUUID } from "node:crypto";
import type { BaseMessage } from "@langchain/core/messages";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createApp, type App } from "../../lib/app.js";
import { loadConfig } from "../../lib/config/config.js";
import { silentLogger } from "../../lib/logger.js";
import { DEFAULT_LEASE_TTL_MS } from "../../lib/config/database-config.js";
import { COLLECTIONS } from "../../lib/store/collections.js";
import { apiPrincipal, type Caller } from "../../lib/auth/principal.js";
import { chainBreak } from "../support/checkpoint-chain.js";
import { lastUserText, startConverseEndpoint, type ConverseEndpoint } from "../support/converse-endpoint.js";
import { Gate } from "../support/gate.js";
import { ManualClock } from "../support/manual-clock.js";
import { useTestDatabase } from "../support/store-fixture.js";

const caller: Caller = { principal: apiPrincipal("alice"), roles: [] };

let converse: ConverseEndpoint;
const database = useTestDatabase("fencing", { clearBeforeEach: false });
const apps: App[] = [];
/** Model calls whose question names a gate wait at it until the test opens it. */
const gates = new Map<string, Gate>();

beforeAll(async () => {
  converse = await startConverseEndpoint({
    respond: async (request) => {
      const text = lastUserText(request);
      for (const [name, gate] of gates) if (text.includes(name)) await gate.pass();
      return { text: `answer to: ${text}` };
    },
  });
  for (const [name, value] of Object.entries(converse.environment)) vi.stubEnv(name, value);
});

afterAll(async () => {
  for (const gate of gates.values()) gate.open();
  await Promise.all(apps.map((a) => a.close()));
  await converse?.close();
  vi.unstubAllEnvs();
});

/** One container: its own app over the shared database, on the test's clock. */
async function container(clock: ManualClock): Promise<App> {
  const config = loadConfig({ MONGODB_URI: "mongodb://unused", MONGODB_DB: database.dbName, MODEL_PROVIDER: "bedrock" });
  const app = await createApp(config, { mongoClient: database.client, clock, logger: silentLogger });
  apps.push(app);
  return app;
}

function gate(name: string): Gate {
  const g = new Gate();
  gates.set(name, g);
  return g;
}

async function stateMessages(app: App, conversationId: string): Promise<BaseMessage[]> {
  const tuple = await app.database.checkpointer.getTuple({ configurable: { thread_id: conversationId } });
  return (tuple?.checkpoint.channel_values.messages as BaseMessage[] | undefined) ?? [];
}

describe("TurnRunner", () => {
  describe("run with a model call longer than the lease", () => {
    it("keeps the lease through a five-minute model call: another turn meets a conflict throughout", async () => {
      const clock = new ManualClock();
      const [a, b] = [await container(clock), await container(clock)];
      const { _id: conversationId } = await a.database.conversations.create(caller.principal);
      const slow = gate("five minutes");
      const first = a.runner.run({ conversationId, caller, content: "five minutes of thought", turnId: randomUUID() });
      await slow.reached;

      for (let elapsed = 0; elapsed < 5 * 60_000; elapsed += 10_000) {
        await clock.advance(10_000);
        const meanwhile = b.runner.run({ conversationId, caller, content: "meanwhile", turnId: randomUUID() });
        await expect(meanwhile).rejects.toMatchObject({ name: "ConflictError" });
      }
      slow.open();

      await expect(first).resolves.toMatchObject({ answer: "answer to: five minutes of thought" });
      const afterwards = b.runner.run({ conversationId, caller, content: "afterwards", turnId: randomUUID() });
      await expect(afterwards).resolves.toMatchObject({ answer: "answer to: afterwards" });
      expect((await stateMessages(a, conversationId)).map((m) => m.content)).toEqual([
        "five minutes of thought",
        "answer to: five minutes of thought",
        "afterwards",
        "answer to: afterwards",
      ]);
      expect(clock.scheduled).toBe(0);
    });
  });

  describe("run whose lease lapsed while its process was frozen", () => {
    it("throws StaleWriterError when the late model answer arrives, and writes none of it", async () => {
      const clock = new ManualClock();
      const [a, b] = [await container(clock), await container(clock)];
      const { _id: conversationId } = await a.database.conversations.create(caller.principal);
      const frozen = gate("frozen question");
      const tA = randomUUID();
      const stale = a.runner.run({ conversationId, caller, content: "frozen question", turnId: tA });
      await frozen.reached;

      clock.pause(DEFAULT_LEASE_TTL_MS + 1);
      const tB = randomUUID();
      const next = b.runner.run({ conversationId, caller, content: "next question", turnId: tB });
      await expect(next).resolves.toMatchObject({ answer: "answer to: next question" });
      frozen.open();

      await expect(stale).rejects.toMatchObject({ name: "StaleWriterError" });
      expect((await stateMessages(a, conversationId)).map((m) => m.content)).toEqual(["frozen question", "next question", "answer to: next question"]);
      expect(await chainBreak(a.database.checkpointer, conversationId)).toBeUndefined();
      const record = await a.database.messages.list(conversationId);
      expect(record.map((m) => `${m.turnId}:${m.role}`)).toEqual([`${tA}:user`, `${tB}:user`, `${tB}:assistant`]);
      expect(await a.database.turns.get(tA)).toMatchObject({ status: "failed", error: { code: "interrupted" } });
      expect(await database.db.collection(COLLECTIONS.modelCalls).countDocuments({ turnId: tA })).toBe(0);
    });

    it("aborts the model call when its next heartbeat finds the lease taken, before any answer", async () => {
      const clock = new ManualClock();
      const [a, b] = [await container(clock), await container(clock)];
      const { _id: conversationId } = await a.database.conversations.create(caller.principal);
      const never = gate("never answered");
      const stale = a.runner.run({ conversationId, caller, content: "never answered", turnId: randomUUID() });
      await never.reached;

      clock.pause(DEFAULT_LEASE_TTL_MS + 1);
      await b.runner.run({ conversationId, caller, content: "taken over", turnId: randomUUID() });
      await clock.advance(1);

      await expect(stale).rejects.toMatchObject({ name: "StaleWriterError" });
      never.open();
      expect((await stateMessages(a, conversationId)).map((m) => m.content)).toEqual(["never answered", "taken over", "answer to: taken over"]);
    });
  });
});
