import { randomUUID } from "node:crypto";
import { z } from "zod";
import { costOf } from "../../lib/agent/model-usage.js";
import { createApp, type App } from "../../lib/app.js";
import { DEFAULT_MODEL_PRICES } from "../../lib/config/model-config.js";
import { loadConfig } from "../../lib/config/config.js";
import { silentLogger, type StructuredLogger } from "../../lib/logger.js";
import type { ModelCallRecord } from "../../lib/store/turn-record.js";
import { apiPrincipal, type Caller } from "../../lib/auth/principal.js";
import type { ToolDefinition } from "../../lib/tools/tool.js";
import {
  lastUserText,
  startConverseEndpoint,
  type ConverseEndpoint,
  type ConverseRequest,
  type RecordedConverseRequest,
} from "../support/converse-endpoint.js";
import { useTestDatabase } from "../support/store-fixture.js";

const MODEL_ID = "us.anthropic.claude-sonnet-4-20250514-v1:0";
const caller: Caller = { principal: apiPrincipal("ada", "acme"), roles: [] };

/** Code, which Claude's tokenizer counts about 10 % longer than cl100k: a cl100k budget would be overrun. */
function code(turn: number, lines: number): string {
  return Array.from(
    { length: lines },
    (_, i) => `const total${turn}_${i} = rows.filter((r) => r.region === 'r${i % 7}').map((r) => r.units * r.price).reduce((a, b) => a + b, 0);`,
  ).join("\n");
}

const readLog: ToolDefinition = {
  name: "read_log",
  description: "Returns the latest lines of the build log.",
  schema: z.object({ lines: z.number().int() }),
  sideEffects: false,
  run: async ({ lines }: { lines: number }) => code(999, lines),
};

/** Reads the log once or twice when asked about it (by the question's text), then answers with code. */
function respond(request: ConverseRequest) {
  const question = [...request.messages].reverse().find((m) => m.role === "user" && m.content.some((b) => "text" in b));
  const text = question ? lastUserText({ ...request, messages: [question] }) : "";
  const results = request.messages.slice(request.messages.indexOf(question!)).filter((m) => m.content.some((b) => "toolResult" in b)).length;
  if (text.includes("log") && results < (text.includes("twice") ? 2 : 1)) return { toolUses: [{ name: "read_log", input: { lines: 12 } }] };
  return { text: `Here is the fix:\n${code(results, text.startsWith("Briefly") ? 1 : 6)}` };
}

/** Below Claude Sonnet's 1,024, so the short views of these conversations carry cache points; endpoint and product agree on it. */
const MIN_TOKENS_PER_CHECKPOINT = 300;

let converse: ConverseEndpoint;
const database = useTestDatabase("graph", { clearBeforeEach: false });
const apps: App[] = [];

beforeAll(async () => {
  converse = await startConverseEndpoint({ respond, cache: { minTokensPerCheckpoint: MIN_TOKENS_PER_CHECKPOINT } });
  for (const [name, value] of Object.entries(converse.environment)) vi.stubEnv(name, value);
});

afterAll(async () => {
  await Promise.all(apps.map((app) => app.close()));
  await converse?.close();
  vi.unstubAllEnvs();
});

async function bedrockApp(env: Record<string, string> = {}, logger: StructuredLogger = silentLogger): Promise<App> {
  const config = loadConfig({
    MONGODB_URI: "mongodb://unused",
    MONGODB_DB: database.dbName,
    MODEL_PROVIDER: "bedrock",
    BEDROCK_MODEL_ID: MODEL_ID,
    PROMPT_CACHE_MIN_TOKENS: String(MIN_TOKENS_PER_CHECKPOINT),
    ...env,
  });
  const app = await createApp(config, {
    mongoClient: database.client,
    tools: [readLog],
    logger,
  });
  apps.push(app);
  return app;
}

/** Runs the questions as turns of one conversation; returns every model call with the request that carried it. */
async function converse_(app: App, questions: string[]): Promise<{ call: ModelCallRecord; request: RecordedConverseRequest }[]> {
  const { _id: conversationId } = await app.database.conversations.create(caller.principal);
  const calls: { call: ModelCallRecord; request: RecordedConverseRequest }[] = [];
  for (const content of questions) {
    const before = converse.requests.filter((r) => r.operation !== "count-tokens").length;
    const { turnId } = await app.runner.run({ conversationId, caller, content, turnId: randomUUID() });
    const requests = converse.requests.filter((r) => r.operation !== "count-tokens").slice(before);
    const records = await app.database.turns.listCalls(turnId);
    expect(records).toHaveLength(requests.length);
    records.forEach((call, i) => calls.push({ call, request: requests[i] }));
  }
  return calls;
}

const questions = (n: number) =>
  Array.from({ length: n }, (_, t) => (t % 3 === 1 ? `Why does the build fail? Read the log twice.\n${code(t, 8)}` : `Review this:\n${code(t, 8)}`));

/** The cache points of a request as it arrived: [index in the view, ttl]; the system prompt is the view's message 0. */
function wirePoints(request: RecordedConverseRequest): [number, string][] {
  const body = request.body!;
  const points: [number, string][] = [];
  if (body.system?.some((b) => "cachePoint" in b)) points.push([0, "5m"]);
  body.messages.forEach((message, m) => {
    for (const block of message.content) if ("cachePoint" in block) points.push([m + 1, block.cachePoint.ttl ?? "5m"]);
  });
  return points;
}

describe("createAgentGraph", () => {
  describe("agent node", () => {
    it("sends the view's cache points to Bedrock where the record places them, and records what the cache read and wrote", async () => {
      const app = await bedrockApp({ VIEW_FINISHED_TURNS: "2", VIEW_HISTORY_BLOCK_TURNS: "3" });
      const calls = await converse_(app, questions(7));
      for (const { call, request } of calls) {
        // One view message per wire message: no two tool results in a row in this conversation.
        expect(wirePoints(request)).toEqual(call.stats.cachePoints.map((p) => [p.after, p.ttl]));
        expect(call.usage.cacheReadTokens).toBe(request.cache?.cacheReadInputTokens ?? 0);
        expect(call.usage.cacheWriteTokens).toBe(request.cache?.cacheWriteInputTokens ?? 0);
        expect(call.usage.inputTokens).toBe(request.inputTokens);
      }
      // Every later call of a turn reads what the one before it wrote.
      const later = calls.filter(({ call }) => call.index > 0);
      expect(later.length).toBeGreaterThan(0);
      for (const { call } of later) expect(call.usage.cacheReadTokens).toBeGreaterThan(0);
      const read = calls.reduce((n, { call }) => n + (call.usage.cacheReadTokens ?? 0), 0);
      const input = calls.reduce((n, { call }) => n + call.usage.inputTokens, 0);
      expect(read / input).toBeGreaterThan(0.4);
    });

    it("records each call's cost by the model's price, and the turn's as the sum of its calls", async () => {
      const app = await bedrockApp();
      const { _id: conversationId } = await app.database.conversations.create(caller.principal);
      const turnId = randomUUID();
      await app.runner.run({ conversationId, caller, content: `Read the log twice.\n${code(1, 8)}`, turnId });
      const turn = await app.database.turns.getWithCalls(turnId);
      const price = DEFAULT_MODEL_PRICES["anthropic.claude-sonnet-4-20250514-v1:0"];
      expect(turn!.calls).toHaveLength(3);
      for (const call of turn!.calls) expect(call.usage.costUsd).toBeCloseTo(costOf(call.usage, price), 12);
      expect(turn!.usage.costUsd).toBeCloseTo(
        turn!.calls.reduce((n, c) => n + c.usage.costUsd!, 0),
        12,
      );
      expect(turn!.usage.cacheReadTokens).toBe(turn!.calls.reduce((n, c) => n + c.usage.cacheReadTokens!, 0));
    });

    it("keeps every view within the budget in the model's tokens, and its estimate within 5 % from the fourth call", async () => {
      const budget = 2_500;
      const app = await bedrockApp({ VIEW_TOTAL_BUDGET: String(budget), VIEW_FINISHED_TURNS: "8" });
      // Small turns, so the views fill the budget closely: in cl100k tokens, which Claude counts longer, they would overrun it.
      const calls = await converse_(
        app,
        Array.from({ length: 24 }, (_, t) => `Briefly:\n${code(t, 2)}`),
      );
      expect(Math.max(...calls.map(({ call }) => call.usage.inputTokens))).toBeGreaterThan(budget * 0.9);
      for (const { call } of calls) expect(call.usage.inputTokens).toBeLessThanOrEqual(budget);
      for (const { call } of calls.slice(3)) expect(Math.abs(call.estimateError!)).toBeLessThan(0.05);
      const margins = calls.map(({ call }) => call.stats.tokenEstimate.margin);
      expect(margins[margins.length - 1]).toBeLessThan(margins[0]);
    });

    it("measures a model's first call in the container with CountTokens when configured, so even it is estimated exactly", async () => {
      const app = await bedrockApp({ BEDROCK_COUNT_TOKENS: "true" });
      const before = converse.requests.length;
      const calls = await converse_(app, [`Review this:\n${code(1, 8)}`]);
      expect(converse.requests.slice(before).map((r) => r.operation)).toEqual(["count-tokens", "converse-stream"]);
      expect(converse.requests[before].inputTokens).toBe(calls[0].call.usage.inputTokens);
      expect(calls[0].call.estimateError).toBe(0);
    });

    it("logs each call's cache reads and writes, cost and estimate error as numbers", async () => {
      const entries: { message: string; fields: Record<string, unknown> }[] = [];
      const capture = (message: string, fields: Record<string, unknown>) => entries.push({ message, fields });
      const app = await bedrockApp({}, { info: capture, warn: capture, error: capture });
      await converse_(app, [`Read the log.\n${code(1, 8)}`]);
      const logged = entries.filter((e) => e.message === "model call").map((e) => e.fields);
      expect(logged).toHaveLength(2);
      for (const fields of logged) {
        expect(fields).toMatchObject({
          cachePoints: expect.any(Number),
          cacheReadTokens: expect.any(Number),
          costUsd: expect.any(Number),
          estimateError: expect.any(Number),
        });
        expect(Object.values(fields).every((v) => typeof v === "number" || v === fields.turnId)).toBe(true);
      }
      expect(logged[1].cacheReadTokens).toBeGreaterThan(0);
    });
  });
});
