import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { InMemorySpanExporter, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { DEFAULT_BEDROCK_MODEL_ID } from "../../lib/config/model-config.js";
import { loadTracingConfig } from "../../lib/config/tracing-config.js";
import { registerLocalTracing, type LocalTracing } from "../../lib/local/tracing.js";
import { SEMCONV_ATTRIBUTES } from "../../lib/observability/index.js";
import { startTestServer, type TestServer } from "../support/api-client.js";
import { lastUserText, startConverseEndpoint, type ConverseEndpoint, type ConverseRequest, type ScriptedReply } from "../support/converse-endpoint.js";

/**
 * Attribute names the conventions define, copied from them (not from the code under test):
 * OpenTelemetry GenAI semantic conventions, open-telemetry/semantic-conventions-genai at 002c8a6
 * (schema gen-ai/1.42.0; https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/):
 * the inference span and the execute tool span; core semantic conventions v1.41: `error.type`,
 * the HTTP server span, the messaging spans (https://opentelemetry.io/docs/specs/semconv/messaging/messaging-spans/).
 */
const CONVENTION_NAMES = new Set([
  // gen-ai-spans.md, "Inference"
  "gen_ai.operation.name",
  "gen_ai.provider.name",
  "error.type",
  "gen_ai.conversation.id",
  "gen_ai.output.type",
  "gen_ai.request.choice.count",
  "gen_ai.request.model",
  "gen_ai.request.seed",
  "gen_ai.request.stream",
  "gen_ai.request.top_k",
  "server.port",
  "gen_ai.request.frequency_penalty",
  "gen_ai.request.max_tokens",
  "gen_ai.request.presence_penalty",
  "gen_ai.request.stop_sequences",
  "gen_ai.request.temperature",
  "gen_ai.request.top_p",
  "gen_ai.response.finish_reasons",
  "gen_ai.response.id",
  "gen_ai.response.model",
  "gen_ai.response.time_to_first_chunk",
  "gen_ai.usage.cache_creation.input_tokens",
  "gen_ai.usage.cache_read.input_tokens",
  "gen_ai.usage.input_tokens",
  "gen_ai.usage.output_tokens",
  "gen_ai.usage.reasoning.output_tokens",
  "server.address",
  // gen-ai-spans.md, "Execute tool span" (the opt-in arguments and result are left out on purpose)
  "gen_ai.tool.name",
  "gen_ai.tool.call.id",
  "gen_ai.tool.description",
  "gen_ai.tool.type",
  // http-spans.md, "HTTP server span"
  "http.request.method",
  "http.response.status_code",
  "http.route",
  "url.path",
  "url.scheme",
  // messaging-spans.md
  "messaging.system",
  "messaging.operation.name",
  "messaging.operation.type",
  "messaging.destination.name",
  "messaging.message.id",
]);

/** What a question and a tool's row carry: no span may hold either. */
const SECRET_QUESTION = "CANARYtracequestion41d9";
const SECRET_ROW = "CANARYtracerow7e02";

/** `sql_query {json}` calls the tool; a tool result is quoted back; anything else is answered. */
function respond(request: ConverseRequest): ScriptedReply {
  const last = request.messages[request.messages.length - 1];
  const results = last.content.flatMap((b) => ("toolResult" in b ? b.toolResult.content.map((c) => ("text" in c ? c.text : JSON.stringify(c.json))) : []));
  if (results.length > 0) return { text: `the tool said: ${results.join("\n")}` };
  const call = /^(\w+) (\{.*\})$/s.exec(lastUserText(request).trim());
  if (call) return { toolUses: [{ name: call[1], input: JSON.parse(call[2]) }] };
  return { text: `answer to: ${lastUserText(request)}` };
}

const exporter = new InMemorySpanExporter();
let tracing: LocalTracing | undefined;
let converse: ConverseEndpoint;
let t: TestServer;

beforeAll(async () => {
  converse = await startConverseEndpoint({ respond });
  for (const [name, value] of Object.entries(converse.environment)) vi.stubEnv(name, value);
  // The local server's own registration, with the in-memory exporter in place of the console's.
  tracing = registerLocalTracing(loadTracingConfig({}), { exporter });
  t = await startTestServer({ MODEL_PROVIDER: "bedrock" });
});

afterAll(async () => {
  await t?.close();
  await tracing?.shutdown();
  await converse?.close();
  vi.unstubAllEnvs();
});

const byName = (spans: ReadableSpan[], name: string) => spans.filter((s) => s.name === name);
const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;
const idOf = (span: ReadableSpan) => span.spanContext().spanId;

async function askWithTool(headers: Record<string, string> = {}) {
  const token = await t.token("alice");
  const { conversationId } = (await t.call("POST", "/v1/conversations", { token })).body as { conversationId: string };
  const content = `sql_query {"sql": "SELECT '${SECRET_ROW}' AS code -- ${SECRET_QUESTION}"}`;
  const asked = await t.call("POST", `/v1/conversations/${conversationId}/messages`, { token, json: { content }, headers });
  return { conversationId, asked };
}

/** The sync turn's spans, asked once and shared by the tests that read them (a turn takes a second or more). */
let syncTurn: Promise<{ conversationId: string; status: number; spans: ReadableSpan[] }> | undefined;
const askedSync = () =>
  (syncTurn ??= (async () => {
    exporter.reset();
    const { conversationId, asked } = await askWithTool();
    return { conversationId, status: asked.status, spans: turnTrace() };
  })());

/** The spans of the one trace the POST of a message started (the conversation's creation is another request). */
function turnTrace(): ReadableSpan[] {
  const post = exporter.getFinishedSpans().find((s) => s.kind === SpanKind.SERVER && String(s.attributes["url.path"]).endsWith("/messages"));
  expect(post).toBeDefined();
  return exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === post!.spanContext().traceId);
}

async function waitForSpan(name: string): Promise<void> {
  for (let i = 0; i < 200 && byName(exporter.getFinishedSpans(), name).length === 0; i++) await new Promise((r) => setTimeout(r, 25));
}

describe("tracing", () => {
  describe("a turn answered in the request", () => {
    it("is one trace: the request span, then chat, execute_tool, chat under it, in order", async () => {
      const { status, spans } = await askedSync();
      expect(status).toBe(200);
      const [request] = spans.filter((s) => s.kind === SpanKind.SERVER);
      expect(request.name).toBe("POST");
      expect(parentOf(request)).toBeUndefined();
      const children = spans.filter((s) => parentOf(s) === idOf(request)).sort((a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1]);
      expect(children.map((s) => s.name)).toEqual([`chat ${DEFAULT_BEDROCK_MODEL_ID}`, "execute_tool sql_query", `chat ${DEFAULT_BEDROCK_MODEL_ID}`]);
    });

    it("gives each model call the conventions' chat attributes, with usage and why it stopped", async () => {
      const { conversationId, spans } = await askedSync();
      const chats = spans.filter((s) => s.name.startsWith("chat "));
      expect(chats).toHaveLength(2);
      for (const chat of chats) {
        expect(chat.kind).toBe(SpanKind.CLIENT);
        expect(chat.attributes).toMatchObject({
          "gen_ai.operation.name": "chat",
          "gen_ai.provider.name": "aws.bedrock",
          "gen_ai.request.model": chat.name.slice("chat ".length),
          "gen_ai.conversation.id": conversationId,
        });
        expect(chat.attributes["gen_ai.usage.input_tokens"]).toBeGreaterThan(0);
        expect(chat.attributes["gen_ai.usage.output_tokens"]).toBeGreaterThan(0);
        expect(typeof chat.attributes["gen_ai.usage.cache_read.input_tokens"]).toBe("number");
        expect(typeof chat.attributes["gen_ai.usage.cache_creation.input_tokens"]).toBe("number");
      }
      expect(chats.map((c) => c.attributes["gen_ai.response.finish_reasons"])).toEqual([["tool_use"], ["end_turn"]]);
    });

    it("gives the tool call an execute_tool span with the tool's name and call id", async () => {
      const [tool] = byName((await askedSync()).spans, "execute_tool sql_query");
      expect(tool.kind).toBe(SpanKind.INTERNAL);
      expect(tool.attributes["gen_ai.operation.name"]).toBe("execute_tool");
      expect(tool.attributes["gen_ai.tool.name"]).toBe("sql_query");
      expect(tool.attributes["gen_ai.tool.call.id"]).toMatch(/.+/);
      expect(tool.status.code).not.toBe(SpanStatusCode.ERROR);
    });

    it("uses only attribute names of the conventions, and puts no message contents or tool data on any span", async () => {
      const { spans } = await askedSync();
      const names = new Set(spans.flatMap((s) => Object.keys(s.attributes)));
      expect([...names].filter((name) => !CONVENTION_NAMES.has(name))).toEqual([]);
      // The code's own list is the conventions' too.
      expect(Object.values(SEMCONV_ATTRIBUTES).filter((name) => !CONVENTION_NAMES.has(name))).toEqual([]);
      const text = JSON.stringify(spans.map((s) => ({ name: s.name, attributes: s.attributes, events: s.events, links: s.links })));
      expect(text).not.toContain(SECRET_QUESTION);
      expect(text).not.toContain(SECRET_ROW);
    });
  });

  describe("a turn handed to the queue", () => {
    it("is one trace through the local server's queue and worker: send under the request, process under send, the turn's spans under process", async () => {
      exporter.reset();
      const { asked } = await askWithTool({ prefer: "respond-async" });
      expect(asked.status).toBe(202);
      await waitForSpan("process turns");
      await waitForSpan("execute_tool sql_query");
      await t.server.turnQueue.drain();
      const spans = turnTrace();
      const [request] = spans.filter((s) => s.kind === SpanKind.SERVER);
      const [send] = byName(spans, "send turns");
      const [process] = byName(spans, "process turns");
      expect(send.kind).toBe(SpanKind.PRODUCER);
      expect(process.kind).toBe(SpanKind.CONSUMER);
      expect(parentOf(send)).toBe(idOf(request));
      expect(parentOf(process)).toBe(idOf(send));
      expect(send.attributes).toMatchObject({ "messaging.operation.type": "send", "messaging.destination.name": "turns" });
      expect(process.attributes).toMatchObject({ "messaging.operation.type": "process", "messaging.destination.name": "turns" });
      const underWorker = spans.filter((s) => parentOf(s) === idOf(process)).map((s) => s.name);
      expect(underWorker).toEqual(expect.arrayContaining(["execute_tool sql_query", expect.stringMatching(/^chat /)]));
      expect(underWorker.filter((n) => n.startsWith("chat "))).toHaveLength(2);
    });
  });
});
