import { type AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { createServer, type AddressInfo } from "node:net";
import { OpenAIClient } from "@langchain/openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../lib/config/config.js";
import { createChatModel } from "../../lib/agent/chat-model.js";
import { OpenAiCompatibleChatModel, openAiCompatibleCallError } from "../../lib/agent/openai-compatible-model.js";
import { ModelBusyError, ModelCallFailedError } from "../../lib/errors.js";
import { startTestServer, type TestServer } from "../support/api-client.js";
import { type ChatRequest, type OpenAiEndpoint, openAiMessagesProblem, startOpenAiEndpoint } from "../support/openai-endpoint.js";

const MODEL = "qwen3:8b";
const KEY = "sk-local";

/** The stand-in's answers: counts orders with a tool when asked, then answers from the tool's result. */
function reply(request: ChatRequest) {
  const last = request.messages.at(-1);
  if (last?.role === "tool") return { content: `The tool said: ${String(last.content).slice(0, 40)}` };
  const text = typeof last?.content === "string" ? last.content : "";
  if (/count the orders/i.test(text)) return { toolCalls: [{ name: "sql_query", args: { sql: "SELECT count(*) AS n FROM orders" } }] };
  return { content: `You said: ${text}` };
}

describe("OpenAiCompatibleChatModel", { timeout: 60_000 }, () => {
  let endpoint: OpenAiEndpoint;
  beforeAll(async () => {
    endpoint = await startOpenAiEndpoint({ model: MODEL, apiKey: KEY, reply });
  });
  afterAll(() => endpoint.close());

  const model = (overrides: { baseUrl?: string; apiKey?: string; model?: string } = {}) =>
    new OpenAiCompatibleChatModel({ baseUrl: endpoint.baseUrl, model: MODEL, apiKey: KEY, ...overrides }, { maxOutputTokens: 256, maxRetries: 0 });

  describe("invoke", () => {
    it("returns a tool call, then an answer from its result, with the usage the server reported", async () => {
      const tools = [{ name: "sql_query", description: "one read-only query", schema: { type: "object", properties: { sql: { type: "string" } } } }];
      const bound = model().bindTools(tools);
      const first = (await bound.invoke([new HumanMessage("Count the orders")])) as AIMessage;
      expect(first.tool_calls).toEqual([expect.objectContaining({ name: "sql_query", args: { sql: "SELECT count(*) AS n FROM orders" } })]);
      const call = first.tool_calls?.[0];
      const second = (await bound.invoke([
        new HumanMessage("Count the orders"),
        first,
        new ToolMessage({ tool_call_id: call?.id ?? "", content: "n\n1042" }),
      ])) as AIMessage;
      expect(second.content).toBe("The tool said: n\n1042");
      expect(second.usage_metadata?.input_tokens).toBeGreaterThan(0);
      expect(endpoint.rejections).toEqual([]);
    });

    it("throws ModelCallFailedError model_denied for a key the server refuses", async () => {
      await expect(model({ apiKey: "wrong" }).invoke("hi")).rejects.toMatchObject({ name: "ModelCallFailedError", code: "model_denied" });
    });

    it("throws ModelCallFailedError model_not_found for a model the server does not have", async () => {
      const error = await model({ model: "nope" })
        .invoke("hi")
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ModelCallFailedError);
      expect(error).toMatchObject({ code: "model_not_found", reason: `HTTP 404 from the OpenAI-compatible server at ${new URL(endpoint.baseUrl).host}` });
    });

    it("throws ModelBusyError with the server's Retry-After when it throttles", async () => {
      endpoint.failNext({ status: 429, retryAfterSeconds: 7 });
      const error = await model()
        .invoke("hi")
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ModelBusyError);
      expect(error).toMatchObject({ code: "model_busy", retryAfterSeconds: 7 });
    });

    it("throws ModelCallFailedError model_unreachable naming the refused connection and the URL when nothing listens at the base URL", async () => {
      const baseUrl = `http://127.0.0.1:${await closedPort()}/v1`;
      const error = await model({ baseUrl })
        .invoke("hi")
        .catch((e: unknown) => e);
      expect(error).toMatchObject({
        code: "model_unreachable",
        reason: `connection refused (ECONNREFUSED): no answer from the OpenAI-compatible server at ${baseUrl}`,
        message: `the model could not be reached (connection refused (ECONNREFUSED): no answer from the OpenAI-compatible server at ${baseUrl})`,
      });
    });
  });
});

/** A port nothing listens on: one the system gave out, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe("openAiCompatibleCallError", () => {
  it("returns model_unreachable with the cause's code and the base URL without its credentials or query", () => {
    const refused = Object.assign(new Error("connect ECONNREFUSED 10.0.0.7:8000"), { code: "ECONNREFUSED" });
    const connection = new OpenAIClient.APIConnectionError({ cause: new TypeError("fetch failed", { cause: refused }) });
    const error = openAiCompatibleCallError(connection, "https://ada:s3cret@models.example:8000/v1?key=sk-hidden");
    expect(error).toMatchObject({
      code: "model_unreachable",
      reason: "connection refused (ECONNREFUSED): no answer from the OpenAI-compatible server at https://models.example:8000/v1",
    });
    expect(JSON.stringify({ message: (error as Error).message, reason: (error as ModelCallFailedError).reason })).not.toMatch(/s3cret|sk-hidden|ada/);
  });

  it("returns model_unreachable saying the call timed out, or that the connection failed when no code says why", () => {
    const timedOut = openAiCompatibleCallError(new OpenAIClient.APIConnectionTimeoutError(), "http://127.0.0.1:11434/v1");
    expect(timedOut).toMatchObject({ reason: "timed out: no answer from the OpenAI-compatible server at http://127.0.0.1:11434/v1" });
    const unexplained = openAiCompatibleCallError(new OpenAIClient.APIConnectionError({ cause: new TypeError("fetch failed") }), "http://127.0.0.1:11434/v1");
    expect(unexplained).toMatchObject({ reason: "connection failed: no answer from the OpenAI-compatible server at http://127.0.0.1:11434/v1" });
  });

  it("returns an error it does not know as it is, and a typed model error unchanged", () => {
    const other = new RangeError("x");
    expect(openAiCompatibleCallError(other, "http://127.0.0.1:1/v1")).toBe(other);
    const typed = new ModelCallFailedError("m", "model_denied", "r");
    expect(openAiCompatibleCallError(typed, "http://127.0.0.1:1/v1")).toBe(typed);
  });
});

describe("createChatModel", () => {
  it("returns the OpenAI-compatible model for MODEL_PROVIDER=openai-compatible, from the settings", () => {
    const config = loadConfig({ MODEL_PROVIDER: "openai-compatible", OPENAI_BASE_URL: "http://127.0.0.1:11434/v1", OPENAI_MODEL: MODEL });
    const chat = createChatModel(config.model);
    expect(chat).toBeInstanceOf(OpenAiCompatibleChatModel);
    expect((chat as OpenAiCompatibleChatModel).model).toBe(MODEL);
  });

  it("throws a ValidationError naming OPENAI_BASE_URL when it is missing", () => {
    expect(() => loadConfig({ MODEL_PROVIDER: "openai-compatible", OPENAI_MODEL: MODEL })).toThrow(
      expect.objectContaining({ details: [expect.objectContaining({ path: "OPENAI_BASE_URL" })] }),
    );
  });
});

describe("turns with MODEL_PROVIDER=openai-compatible, against a stand-in that rejects what the OpenAI API rejects", { timeout: 120_000 }, () => {
  let endpoint: OpenAiEndpoint;
  let api: TestServer;
  beforeAll(async () => {
    endpoint = await startOpenAiEndpoint({ model: MODEL, apiKey: KEY, reply });
    api = await startTestServer({ MODEL_PROVIDER: "openai-compatible", OPENAI_BASE_URL: endpoint.baseUrl, OPENAI_MODEL: MODEL, OPENAI_API_KEY: KEY });
  });
  afterAll(async () => {
    await api.close();
    await endpoint.close();
  });

  it("returns answers over several turns with tools, every request valid, each tool call answered in order and no cache point sent", async () => {
    const token = await api.token("alice");
    const { body: created } = await api.call("POST", "/v1/conversations", { token });
    const ask = (content: string) => api.call("POST", `/v1/conversations/${created.conversationId}/messages`, { token, json: { content } });
    const first = await ask("Count the orders, please");
    expect(first).toMatchObject({ status: 200, body: { status: "completed" } });
    expect(first.body.answer).toMatch(/^The tool said: /);
    expect((await ask("My name is Ada.")).body.answer).toBe("You said: My name is Ada.");
    expect((await ask("Count the orders again")).body.answer).toMatch(/^The tool said: /);

    expect(endpoint.rejections).toEqual([]);
    expect(endpoint.requests.length).toBe(5);
    expect(JSON.stringify(endpoint.requests)).not.toMatch(/cachePoint|cache_control/);
    for (const request of endpoint.requests) expect(openAiMessagesProblem(request.messages)).toBeUndefined();
    // The last request holds the finished turns as question/answer pairs and the active tool exchange whole.
    const roles = endpoint.requests.at(-1)?.messages.map((m) => m.role);
    expect(roles?.slice(-3)).toEqual(["user", "assistant", "tool"]);
  });

  it("answers 503 model_busy with the server's Retry-After when it throttles, as the API maps ModelBusyError", async () => {
    const token = await api.token("bob");
    const { body: created } = await api.call("POST", "/v1/conversations", { token });
    endpoint.failNext({ status: 429, retryAfterSeconds: 9 });
    const busy = await api.call("POST", `/v1/conversations/${created.conversationId}/messages`, { token, json: { content: "hello" } });
    expect(busy.status).toBe(503);
    expect(busy.body.error.code).toBe("model_busy");
    expect(busy.headers.get("retry-after")).toBe("9");
  });
});

describe("openAiMessagesProblem (the stand-in's rules)", () => {
  it("returns the OpenAI API's refusal of a tool message that answers no assistant tool call", () => {
    expect(
      openAiMessagesProblem([
        { role: "user", content: "hi" },
        { role: "tool", tool_call_id: "call_1", content: "x" },
      ]),
    ).toMatch(/messages with role 'tool' must be a response to a preceeding message with 'tool_calls'/);
  });

  it("returns the refusal of tool calls left unanswered before the next message", () => {
    const calls = [{ id: "call_1", type: "function", function: { name: "f", arguments: "{}" } }];
    expect(
      openAiMessagesProblem([
        { role: "user", content: "hi" },
        { role: "assistant", tool_calls: calls },
        { role: "user", content: "and?" },
      ]),
    ).toMatch(/did not have response messages: call_1/);
  });

  it("returns the refusal of empty content, missing content and a Bedrock cache point part", () => {
    expect(openAiMessagesProblem([{ role: "user", content: [] }])).toMatch(/empty array/);
    expect(openAiMessagesProblem([{ role: "assistant" }])).toMatch(/Missing required parameter: 'messages\[0\]\.content'/);
    expect(openAiMessagesProblem([{ role: "user", content: [{ type: "text", text: "a" }, { type: "cachePoint" }] }])).toMatch(/Invalid value: 'cachePoint'/);
  });

  it("returns nothing for a valid exchange: a question, a tool call, its result, an answer", () => {
    const calls = [{ id: "call_1", type: "function", function: { name: "f", arguments: "{}" } }];
    expect(
      openAiMessagesProblem([
        { role: "system", content: "s" },
        { role: "user", content: "q" },
        { role: "assistant", content: null, tool_calls: calls },
        { role: "tool", tool_call_id: "call_1", content: "r" },
        { role: "assistant", content: "a" },
      ]),
    ).toBeUndefined();
  });
});
