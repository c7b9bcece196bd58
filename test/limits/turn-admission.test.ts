import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { AGENT_PROTOCOL_ASSISTANT_ID } from "../../lib/api/agent-protocol-schemas.js";
import { createHttpHandler } from "../../lib/api/http-handler.js";
import { createApp } from "../../lib/app.js";
import { apiPrincipal } from "../../lib/auth/principal.js";
import { loadConfig } from "../../lib/config/config.js";
import { scopeId, type LimitScope } from "../../lib/limits/limit-scope.js";
import { COLLECTIONS } from "../../lib/store/collections.js";
import type { ToolDefinition } from "../../lib/tools/tool.js";
import { startTestServer, type ApiResponse, type TestServer } from "../support/api-client.js";
import { Gate } from "../support/gate.js";
import { mongoUri } from "../support/mongo.js";

/**
 * The turn's admission from the caller's side, over the local server's HTTP API (docs/limits.md):
 * whatever an entry is refused or fails with, what the turn took of the limits is given back, and a
 * turn resumed after its approvals takes a slot like a new one.
 */

let gate = new Gate();
/** Holds its turn (and so its conversation and its concurrency slot) until the test opens the gate. */
const waitTool: ToolDefinition = {
  name: "wait_for_test",
  description: "Waits until the test lets it finish.",
  schema: z.object({}),
  sideEffects: false,
  run: async () => {
    await gate.pass();
    return "finished waiting";
  },
};
/** An effect that waits for a person's approval (a configured tool's name): its runs are what a resumed turn did. */
const sale = {
  runs: 0,
  name: "create_follow_up",
  description: "Records a follow-up.",
  schema: z.object({ title: z.string() }),
  sideEffects: true,
  run: async () => {
    sale.runs += 1;
    return "recorded";
  },
} satisfies ToolDefinition & { runs: number };

let t: TestServer;
const clients: Client[] = [];

beforeAll(async () => {
  t = await startTestServer(
    { LIMIT_USER_CONCURRENT_TURNS: "2", TOOL_APPROVALS: JSON.stringify({ create_follow_up: { require: "always" } }) },
    { app: { tools: [waitTool, sale] } },
  );
});
afterAll(async () => {
  gate.open();
  await Promise.all(clients.map((c) => c.close()));
  await t?.close();
});

const userScope = (subject: string): LimitScope => ({ kind: "user", issuer: "api", tenant: null, subject });

/** What the user holds of the limits now: turns at once, reservations not settled, and tokens counted today against those settled. */
async function held(subject: string) {
  const current = await t.server.app.limits.ledger.current(userScope(subject));
  const doc = await t.db.collection<{ _id: string; res?: Record<string, unknown> }>(COLLECTIONS.limitCounters).findOne({ _id: scopeId(userScope(subject)) });
  const days = await t.db
    .collection(COLLECTIONS.usageDaily)
    .find({ scopeId: scopeId(userScope(subject)) })
    .toArray();
  const settled = days.reduce((n, d) => n + (d.weightedTokens as number), 0);
  return { concurrentTurns: current.concurrentTurns, reservations: Object.keys(doc?.res ?? {}).length, unsettledTokens: current.tokensToday - settled };
}

const NOTHING_HELD = { concurrentTurns: 0, reservations: 0, unsettledTokens: 0 };

async function conversation(token: string): Promise<string> {
  return (await t.call("POST", "/v1/conversations", { token })).body.conversationId;
}

const ask = (token: string, id: string, content: string) => t.call("POST", `/v1/conversations/${id}/messages`, { token, json: { content } });

/** `POST /threads/{id}/runs/wait`, as a LangGraph SDK client sends it. */
async function protocolRun(token: string, threadId: string, content: string): Promise<{ status: number }> {
  const response = await fetch(`${t.url}/threads/${threadId}/runs/wait`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ assistant_id: AGENT_PROTOCOL_ASSISTANT_ID, input: { messages: [{ type: "human", content }] } }),
  });
  await response.text();
  return { status: response.status };
}

/** MCP `ask` through the SDK's own client: the HTTP status its error names. */
async function mcpAsk(token: string, conversationId: string, question: string): Promise<{ status: number }> {
  const client = new Client({ name: "turn-admission-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`${t.url}/v1/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } });
  await client.connect(transport);
  clients.push(client);
  const answer = (await client.callTool({ name: "ask", arguments: { conversationId, question } })) as { isError?: boolean; content: { text: string }[] };
  return { status: answer.isError ? (JSON.parse(answer.content[0].text) as { status: number }).status : 200 };
}

/** Resolves once the queue has delivered every resume job of the user's turns (each delivery admits its turn). */
async function resumesDelivered(count: number): Promise<void> {
  const jobs = t.db.collection(COLLECTIONS.turnJobs);
  for (let i = 0; i < 800; i++) {
    if ((await jobs.countDocuments({ "job.resume": { $exists: true }, receiveCount: { $gte: 1 } })) >= count) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`${count} resume job(s) were not delivered`);
}

describe("TurnAdmission", () => {
  describe("run", () => {
    it("gives back the admission of a message refused with 409 on every entry, so nothing is held once nothing runs and the next turns run", async () => {
      const token = await t.token("ada");
      const id = await conversation(token);
      const first = await ask(token, id, "hello");
      expect(first.status).toBe(200);
      gate = new Gate();
      const running = ask(token, id, "wait_for_test {}");
      await gate.reached;
      // The conversation is taken: each entry is admitted (one slot of two is free), then refused by the conversation's lease.
      const refused: { status: number }[] = [];
      refused.push(await ask(token, id, "a second message"));
      refused.push(await t.call("POST", `/v1/conversations/${id}/turns/${first.body.turnId}/edit`, { token, json: { content: "edited" } }));
      refused.push(await t.call("POST", `/v1/conversations/${id}/turns/${first.body.turnId}/regenerate`, { token, json: {} }));
      refused.push(await protocolRun(token, id, "a protocol run"));
      refused.push(await mcpAsk(token, id, "an MCP question"));
      expect(refused.map((r) => r.status)).toEqual([409, 409, 409, 409, 409]);
      expect(await held("ada")).toMatchObject({ concurrentTurns: 1 });
      gate.open();
      expect((await running).status).toBe(200);

      expect(await held("ada")).toEqual(NOTHING_HELD);
      // Both slots are free again: two turns at once are admitted.
      const [a, b] = await Promise.all([ask(token, await conversation(token), "one"), ask(token, await conversation(token), "two")]);
      expect([a.status, b.status]).toEqual([200, 200]);
      expect(await held("ada")).toEqual(NOTHING_HELD);
    });

    it("keeps the slot of a turn handed to the worker while the worker runs it, and leaves nothing held once it ends", async () => {
      const token = await t.token("ben");
      const id = await conversation(token);
      gate = new Gate();
      const queued = await t.call("POST", `/v1/conversations/${id}/messages`, {
        token,
        json: { content: "wait_for_test {}" },
        headers: { prefer: "respond-async" },
      });
      expect(queued.status).toBe(202);
      await gate.reached;
      // Handed to the worker with its slot: the slot is held while the worker runs it, and no first-call reservation stays behind.
      expect(await held("ben")).toMatchObject({ concurrentTurns: 1 });
      gate.open();
      await t.server.turnQueue.drain();
      expect((await t.call("GET", `/v1/conversations/${id}/turns/${queued.body.turnId}`, { token })).body.status).toBe("completed");
      expect(await held("ben")).toEqual(NOTHING_HELD);
    });
  });

  describe("run, for a turn admitted twice", () => {
    it("gives nothing back for a second attempt of a turn whose first holds the slot, and the first gives it back", async () => {
      const { admission } = t.server.app;
      const principal = { issuer: "api" as const, tenant: null, subject: "twice" };
      const turn = { turnId: "00000000-0000-4000-8000-0000000000aa", principal };
      const first = new Gate();
      const running = admission.run(turn, () => first.pass());
      await first.reached;
      // A retry of the same turn while the first attempt runs (the same Idempotency-Key elsewhere): refused by the conversation.
      await expect(
        admission.run(turn, async () => {
          throw new Error("a turn is already running on this conversation");
        }),
      ).rejects.toThrow(/already running/);
      expect(await held("twice")).toMatchObject({ concurrentTurns: 1 });
      first.open();
      await running;
      expect(await held("twice")).toEqual(NOTHING_HELD);
    });

    it("gives back a slot it adopts (the worker taking an API turn handed to it) however the turn ends", async () => {
      const { admission } = t.server.app;
      const principal = { issuer: "api" as const, tenant: null, subject: "adopter" };
      const turnId = "00000000-0000-4000-8000-0000000000bb";
      await admission.run({ turnId, principal }, async () => ({ kind: "queued" }), { handedOff: () => true });
      expect(await held("adopter")).toEqual({ concurrentTurns: 1, reservations: 0, unsettledTokens: 0 });
      await expect(
        admission.run({ turnId, principal, adopts: true }, async () => {
          throw new Error("the model is down");
        }),
      ).rejects.toThrow(/model is down/);
      expect(await held("adopter")).toEqual(NOTHING_HELD);
    });
  });

  describe("run, for a turn resumed after its approvals", () => {
    it("takes a slot: with the user's only slot held, an approved turn does not run until the slot is free", { timeout: 60_000 }, async () => {
      await t.server.app.limits.overrides.set(userScope("rita"), { concurrentTurns: 1 }, "test");
      const token = await t.token("rita");
      // Two turns wait for approval (a waiting turn holds no slot).
      const waiting: { id: string; turnId: string; approvalId: string }[] = [];
      for (const title of ["call the supplier", "call the bank"]) {
        const id = await conversation(token);
        const asked: ApiResponse = await ask(token, id, `create_follow_up {"title": "${title}"}`);
        expect(asked.status).toBe(202);
        waiting.push({ id, turnId: asked.body.turnId, approvalId: asked.body.approvals[0].approvalId });
      }
      expect(await held("rita")).toEqual(NOTHING_HELD);
      // Another turn of hers holds her only slot.
      gate = new Gate();
      const running = ask(token, await conversation(token), "wait_for_test {}");
      await gate.reached;

      for (const w of waiting) {
        const decided = await t.call("POST", `/v1/conversations/${w.id}/approvals/${w.approvalId}`, { token, json: { decision: "approve" } });
        expect(decided.status).toBe(200);
      }
      // Each resume was delivered and asks for a slot a Retry-After at a time; nothing of it runs meanwhile.
      await resumesDelivered(waiting.length);
      const ranMeanwhile = async () => {
        for (let i = 0; i < 40 && sale.runs === 0; i++) await new Promise((resolve) => setTimeout(resolve, 50));
        return sale.runs;
      };
      expect(await ranMeanwhile()).toBe(0);
      for (const w of waiting) expect((await t.call("GET", `/v1/conversations/${w.id}/turns/${w.turnId}`, { token })).body.status).toBe("awaiting_approval");
      expect(await held("rita")).toMatchObject({ concurrentTurns: 1 });

      gate.open();
      expect((await running).status).toBe(200);
      // Asking again after its Retry-After, each resume runs once a slot is free, one at a time.
      await t.server.turnQueue.drain();
      expect(sale.runs).toBe(2);
      for (const w of waiting) expect((await t.call("GET", `/v1/conversations/${w.id}/turns/${w.turnId}`, { token })).body.status).toBe("completed");
      expect(await held("rita")).toEqual(NOTHING_HELD);
    });

    it("answers 429 to the decision when the app has no turn queue and no slot is free; the decision stands and a repeat resumes the turn", async () => {
      const config = loadConfig({
        MONGODB_URI: mongoUri(),
        MONGODB_DB: t.dbName,
        LIMIT_USER_CONCURRENT_TURNS: "1",
        TOOL_APPROVALS: JSON.stringify({ create_follow_up: { require: "always" } }),
      });
      const app = await createApp(config, { tools: [waitTool, sale] });
      try {
        const route = createHttpHandler(app, config, { authenticate: async () => ({ principal: apiPrincipal("nora"), roles: [] }) });
        const call = async (method: string, path: string, body?: unknown) => {
          const response = await route({ method, path, query: {}, headers: { "content-type": "application/json" }, body: JSON.stringify(body ?? {}) });
          return { status: response.status, headers: response.headers, body: response.body ? JSON.parse(response.body) : undefined };
        };
        const id = (await call("POST", "/v1/conversations")).body.conversationId;
        const asked = await call("POST", `/v1/conversations/${id}/messages`, { content: 'create_follow_up {"title": "call the notary"}' });
        expect(asked.status).toBe(202);
        const runsBefore = sale.runs;
        gate = new Gate();
        const other = (await call("POST", "/v1/conversations")).body.conversationId;
        const running = call("POST", `/v1/conversations/${other}/messages`, { content: "wait_for_test {}" });
        await gate.reached;

        const decide = () => call("POST", `/v1/conversations/${id}/approvals/${asked.body.approvals[0].approvalId}`, { decision: "approve" });
        const refused = await decide();
        expect(refused.status).toBe(429);
        expect(refused.body.error).toMatchObject({ code: "rate_limited", limit: "user.concurrentTurns" });
        expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0);
        expect(sale.runs).toBe(runsBefore);
        gate.open();
        expect((await running).status).toBe(200);

        const repeated = await decide();
        expect(repeated.status).toBe(200);
        expect(repeated.body).toMatchObject({ decided: false, resumed: true, approval: { status: "approved" } });
        expect(sale.runs).toBe(runsBefore + 1);
        expect((await call("GET", `/v1/conversations/${id}/turns/${asked.body.turnId}`)).body.status).toBe("completed");
        expect(await held("nora")).toEqual(NOTHING_HELD);
      } finally {
        await app.close();
      }
    });
  });
});
