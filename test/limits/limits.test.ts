import { randomUUID } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import type { HttpRequest } from "../../lib/api/http.js";
import { createHttpHandler } from "../../lib/api/http-handler.js";
import { createApp, type App } from "../../lib/app.js";
import { apiPrincipal, type Caller } from "../../lib/auth/principal.js";
import { loadConfig } from "../../lib/config/config.js";
import { DEFAULT_LIMITS_ADMIN_ROLE } from "../../lib/config/limits-config.js";
import { COLLECTIONS } from "../../lib/store/collections.js";
import { prng } from "../../lib/prng.js";
import { errorResponse as errorBody } from "../../lib/api/schemas.js";
import type { ToolDefinition } from "../../lib/tools/tool.js";
import { mongoUri } from "../support/mongo.js";
import { useTestDatabase } from "../support/store-fixture.js";

const inspector = useTestDatabase("limits", { clearBeforeEach: false });
const opened: App[] = [];
afterAll(async () => {
  for (const app of opened) await app.close().catch(() => undefined);
});

/** Small views and outputs, so a small budget holds a few dozen turns of the local model. */
const MAX_OUTPUT = 256;
const VIEW_BUDGET = 2_000;
/** About what one short turn of the local model uses, weighted tokens. */
const TURN_TOKENS = 150;

/** An instance as a container runs it: its own app and HTTP API over the shared database; callers named by `x-user`. */
async function instance(dbName: string, env: Record<string, string> = {}, now?: () => Date, tools: ToolDefinition[] = []) {
  const config = loadConfig({
    MONGODB_URI: mongoUri(),
    MONGODB_DB: dbName,
    MODEL_MAX_TOKENS: String(MAX_OUTPUT),
    VIEW_TOTAL_BUDGET: String(VIEW_BUDGET),
    ...env,
  });
  const app = await createApp(config, { tools, ...(now && { limitsNow: now }) });
  opened.push(app);
  const authenticate = async (request: HttpRequest): Promise<Caller> => ({
    principal: apiPrincipal(request.headers["x-user"] ?? "nobody", "acme"),
    roles: (request.headers["x-roles"] ?? "").split(",").filter(Boolean),
  });
  const route = createHttpHandler(app, config, { authenticate });
  const call = async (method: string, path: string, user: string, body?: unknown, roles = "") => {
    const response = await route({
      method,
      path: path.split("?")[0],
      query: Object.fromEntries(new URLSearchParams(path.split("?")[1] ?? "")),
      headers: { "x-user": user, "x-roles": roles, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, headers: response.headers, body: response.body ? JSON.parse(response.body) : undefined, raw: response };
  };
  /** A question asked with `Accept: text/event-stream`: the events' names and data, as the stream gave them. */
  const askStreamed = async (user: string, content: string) => {
    const created = await call("POST", "/v1/conversations", user, {});
    const response = await route({
      method: "POST",
      path: `/v1/conversations/${created.body.conversationId}/messages`,
      query: {},
      headers: { "x-user": user, "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify({ content }),
      canStream: true,
    });
    let text = "";
    for await (const chunk of response.stream?.(new AbortController().signal) ?? []) text += chunk;
    await response.settled;
    const events = text.split("\n\n").flatMap((block) => {
      const name = /^event: (.*)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)?.[1];
      return name && data ? [{ name, data: JSON.parse(data) }] : [];
    });
    return { status: response.status, events };
  };
  /** Starts a conversation and asks one question in it. */
  const ask = async (user: string, content = "hello, what can you do?") => {
    const created = await call("POST", "/v1/conversations", user, {});
    return call("POST", `/v1/conversations/${created.body.conversationId}/messages`, user, { content });
  };
  return { app, config, call, ask, askStreamed };
}

/** What the user has used as the limits count it, from the day's usage record (settled calls only). */
async function usedTokens(dbName: string, user: string): Promise<number> {
  const docs = await inspector.client.db(dbName).collection(COLLECTIONS.usageDaily).find({}).toArray();
  return docs.filter((d) => String(d.scopeId).includes(JSON.stringify(user))).reduce((n, d) => n + d.weightedTokens, 0);
}

/** A refusal as docs/limits.md documents it: 429, the code, the limit, Retry-After, and for a budget when it resets. */
function expectRefusal(response: { status: number; headers: Record<string, string>; body: any }, code: "rate_limited" | "budget_exhausted", limit: string) {
  expect(response.status).toBe(429);
  expect(errorBody.safeParse(response.body).success).toBe(true);
  expect(response.body.error).toMatchObject({ code, limit });
  expect(Number(response.headers["retry-after"])).toBeGreaterThan(0);
  if (code === "budget_exhausted") expect(Date.parse(response.body.error.resetsAt)).toBeGreaterThan(Date.now());
}

describe("Limits", () => {
  describe("tokensPerDay across three instances", () => {
    it("never lets concurrent turns overshoot the budget by more than one reservation, and keeps the counters over a restart", {
      timeout: 90_000,
    }, async () => {
      const dbName = `limits_${randomUUID().slice(0, 8)}`;
      const budget = 8_000;
      const env = { LIMIT_USER_TOKENS_PER_DAY: String(budget) };
      const instances = await Promise.all([instance(dbName, env), instance(dbName, env), instance(dbName, env)]);
      const random = prng(32);
      // The largest reservation: a first call at the view's ceiling plus the whole output.
      const reservation = instances[0].app.limits.estimate(VIEW_BUDGET).tokens;
      const responses = await Promise.all(
        Array.from({ length: 30 }, (_, i) => instances[Math.floor(random() * 3)].ask("ada", `question ${i}: ${"words ".repeat(Math.floor(random() * 60))}`)),
      );
      const statuses = responses.map((r) => r.status);
      expect(statuses.filter((s) => s === 200).length).toBeGreaterThan(0);
      expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
      expect(statuses.every((s) => s === 200 || s === 429)).toBe(true);
      for (const r of responses.filter((r) => r.status === 429)) expectRefusal(r, "budget_exhausted", "user.tokensPerDay");
      const used = await usedTokens(dbName, "ada");
      expect(used).toBeLessThanOrEqual(budget + reservation);
      // Every reservation was settled or given back: what counts is exactly what was used.
      const current = await instances[1].app.limits.ledger.current({ kind: "user", issuer: "api", tenant: "acme", subject: "ada" });
      expect(current.tokensToday).toBe(used);
      expect(current.concurrentTurns).toBe(0);

      // Refused while others' reservations were out, the user may have budget left: spent one turn at a time, it runs out.
      let last = await instances[0].ask("ada");
      for (let i = 0; i < 200 && last.status === 200; i++) last = await instances[i % 3].ask("ada");
      expectRefusal(last, "budget_exhausted", "user.tokensPerDay");
      expect(await usedTokens(dbName, "ada")).toBeLessThanOrEqual(budget + reservation);

      for (const i of instances) await i.app.close();
      const restarted = await instance(dbName, env);
      expectRefusal(await restarted.ask("ada"), "budget_exhausted", "user.tokensPerDay");
      expect((await restarted.ask("grace")).status).toBe(200);
    });
  });

  describe("a scripted user", () => {
    // `npm test` runs a short script; the benchmark's 1,000 turns: LIMITS_SCRIPTED_TURNS=1000 (docs/limits.md).
    const turns = Number(process.env.LIMITS_SCRIPTED_TURNS ?? 40);
    it(`is stopped at the budget, at most 1 % over, after about ${turns} turns`, { timeout: Math.max(60_000, turns * 1_000) }, async () => {
      const dbName = `limits_${randomUUID().slice(0, 8)}`;
      // A budget of about `turns` turns of the local model (each uses about TURN_TOKENS).
      const budget = turns * TURN_TOKENS;
      const { app, ask } = await instance(dbName, { LIMIT_USER_TOKENS_PER_DAY: String(budget) });
      const reservation = app.limits.estimate(VIEW_BUDGET).tokens;
      let stopped = -1;
      for (let i = 0; i < turns * 3; i++) {
        const response = await ask("script", `ask ${i}`);
        if (response.status === 429) {
          expectRefusal(response, "budget_exhausted", "user.tokensPerDay");
          stopped = i;
          break;
        }
        expect(response.status).toBe(200);
      }
      expect(stopped).toBeGreaterThan(0);
      const used = await usedTokens(dbName, "script");
      expect(used).toBeLessThanOrEqual(budget * 1.01);
      // Stopped at the budget, not before: what was left could not hold another call's reservation.
      expect(used).toBeGreaterThan(budget - reservation);
    });
  });

  describe("a budget reached between model calls", () => {
    /** A tool with an effect: it counts its runs, and while running spends the rest of the user's budget (an admin lowers it). */
    function spendingTool(onRun: () => Promise<void>): ToolDefinition & { runs: number } {
      const tool = {
        runs: 0,
        name: "record_sale",
        description: "Records a sale.",
        schema: z.object({ amount: z.number() }),
        sideEffects: true,
        run: async () => {
          tool.runs += 1;
          await onRun();
          return "recorded";
        },
      };
      return tool;
    }
    const lower = (app: App, subject: string) =>
      app.limits.overrides.set({ kind: "user", issuer: "api", tenant: "acme", subject }, { tokensPerDay: 1 }, "test");

    it("ends the turn failed with budget_exhausted and a clear message, its tool's effect kept", async () => {
      const dbName = `limits_${randomUUID().slice(0, 8)}`;
      let app: App | undefined;
      const tool = spendingTool(async () => {
        if (app) await lower(app, "mid");
      });
      const made = await instance(dbName, {}, undefined, [tool]);
      app = made.app;
      const response = await made.ask("mid", 'record_sale {"amount": 5}');
      expectRefusal(response, "budget_exhausted", "user.tokensPerDay");
      expect(tool.runs).toBe(1);
      const [turn] = await inspector.client.db(dbName).collection(COLLECTIONS.turns).find({}).toArray();
      expect(turn.status).toBe("failed");
      expect(turn.error).toMatchObject({ code: "budget_exhausted", message: expect.stringContaining("model tokens per day") });
      expect((await made.app.limits.ledger.current({ kind: "user", issuer: "api", tenant: "acme", subject: "mid" })).concurrentTurns).toBe(0);
    });

    it("ends a stream with the failed event naming budget_exhausted", async () => {
      const dbName = `limits_${randomUUID().slice(0, 8)}`;
      let app: App | undefined;
      const tool = spendingTool(async () => {
        if (app) await lower(app, "streamer");
      });
      const made = await instance(dbName, {}, undefined, [tool]);
      app = made.app;
      const { status, events } = await made.askStreamed("streamer", 'record_sale {"amount": 5}');
      expect(status).toBe(200);
      expect(events.at(-1)).toMatchObject({ name: "failed", data: { code: "budget_exhausted" } });
      expect(tool.runs).toBe(1);
      expect((await made.app.limits.ledger.current({ kind: "user", issuer: "api", tenant: "acme", subject: "streamer" })).concurrentStreams).toBe(0);
    });
  });

  describe("turnsPerMinute", () => {
    it("answers 429 rate_limited with Retry-After once a user started its turns for the minute, and lets another user on", async () => {
      const dbName = `limits_${randomUUID().slice(0, 8)}`;
      // The window is the UTC minute: a clock held mid-minute keeps the three turns in one window.
      const midMinute = new Date(Math.floor(Date.now() / 60_000) * 60_000 + 30_000);
      const { ask } = await instance(dbName, { LIMIT_USER_TURNS_PER_MINUTE: "2" }, () => midMinute);
      expect((await ask("rate")).status).toBe(200);
      expect((await ask("rate")).status).toBe(200);
      const third = await ask("rate");
      expectRefusal(third, "rate_limited", "user.turnsPerMinute");
      expect(Number(third.headers["retry-after"])).toBeLessThanOrEqual(60);
      expect((await ask("other")).status).toBe(200);
      // Refused before anything ran: no turn was recorded for it.
      expect(await inspector.client.db(dbName).collection(COLLECTIONS.turns).countDocuments()).toBe(3);
    });
  });

  describe("the admin API", () => {
    it("sets a user's limit that every instance applies within a minute, and refuses callers without the role", async () => {
      const dbName = `limits_${randomUUID().slice(0, 8)}`;
      let clock = Date.now();
      const now = () => new Date(clock);
      const a = await instance(dbName);
      const b = await instance(dbName, {}, now);
      expect((await b.ask("ben")).status).toBe(200);
      const forbidden = await a.call("PUT", "/v1/admin/limits", "ben", { issuer: "api", tenant: "acme", subject: "ben", limits: { tokensPerDay: 1 } });
      expect(forbidden.status).toBe(403);
      const set = await a.call(
        "PUT",
        "/v1/admin/limits",
        "root",
        { issuer: "api", tenant: "acme", subject: "ben", limits: { tokensPerDay: 1 } },
        DEFAULT_LIMITS_ADMIN_ROLE,
      );
      expect(set.status).toBe(200);
      expect(set.body.limits.tokensPerDay).toBe(1);
      expectRefusal(await a.ask("ben"), "budget_exhausted", "user.tokensPerDay");
      // B read ben's limits a moment ago and may keep them for its cache period, never more than a minute.
      clock += 60_000;
      expectRefusal(await b.ask("ben"), "budget_exhausted", "user.tokensPerDay");
      const usage = await a.call("GET", "/v1/admin/usage?issuer=api&tenant=acme&subject=ben", "root", undefined, DEFAULT_LIMITS_ADMIN_ROLE);
      expect(usage.status).toBe(200);
      expect(usage.body.total.turns).toBe(1);
      expect(usage.body.total.inputTokens).toBeGreaterThan(0);
      const tenant = await a.call("GET", "/v1/admin/usage?issuer=api&tenant=acme", "root", undefined, DEFAULT_LIMITS_ADMIN_ROLE);
      expect(tenant.body.total.turns).toBe(1);
      const read = await a.call("GET", "/v1/admin/limits?issuer=api&tenant=acme&subject=ben", "root", undefined, DEFAULT_LIMITS_ADMIN_ROLE);
      expect(read.body).toMatchObject({ limits: { tokensPerDay: 1, usdPerMonth: null }, own: { tokensPerDay: 1 } });
    });
  });
});
