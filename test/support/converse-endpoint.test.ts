import http2 from "node:http2";
import { ChatBedrockConverse } from "@langchain/aws";
import { AIMessage, HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { z } from "zod";
import { BedrockRuntimeClient, CountTokensCommand } from "@aws-sdk/client-bedrock-runtime";
import { countTextTokens } from "../../lib/model-view/token-counter.js";
import { countClaudeTokens } from "./claude-tokens.js";
import {
  countInputTokens,
  defaultResponder,
  startConverseEndpoint,
  TOOL_USE_SYSTEM_PROMPT_TOKENS,
  toolSpecs,
  type ConverseEndpoint,
} from "./converse-endpoint.js";
import { TTL_MS } from "./prompt-cache.js";

const MODEL_ID = "us.anthropic.claude-sonnet-4-20250514-v1:0";

let endpoint: ConverseEndpoint;
/** The simulated cache's clock: tests move it instead of waiting. */
const clock = { now: Date.now() };

beforeAll(async () => {
  endpoint = await startConverseEndpoint({ contextWindowTokens: 5_000, cache: { now: () => clock.now } });
  // The AWS SDK reads AWS_ENDPOINT_URL_BEDROCK_RUNTIME itself: no endpoint is passed to the client.
  for (const [name, value] of Object.entries(endpoint.environment)) vi.stubEnv(name, value);
});

afterAll(async () => {
  vi.unstubAllEnvs();
  await endpoint.close();
});

function model(fields: { maxTokens?: number } = { maxTokens: 512 }): ChatBedrockConverse {
  return new ChatBedrockConverse({ model: MODEL_ID, region: "us-east-1", temperature: 0, ...fields });
}

const weather = tool(async ({ city }: { city: string }) => `Sunny and 21°C in ${city}`, {
  name: "get_weather",
  description: "Current weather for a city",
  schema: z.object({ city: z.string() }),
});

const calls = (id: string, name = "get_weather") => new AIMessage({ content: "", tool_calls: [{ id, name, args: { city: "Paris" }, type: "tool_call" }] });

async function rejection(messages: BaseMessage[], chat: { invoke(m: BaseMessage[]): Promise<unknown> } = model().bindTools([weather])) {
  const before = endpoint.requests.length;
  const error = await chat.invoke(messages).then(
    () => undefined,
    (e: unknown) => e as { name: string; message: string; $metadata?: { httpStatusCode?: number } },
  );
  expect(endpoint.requests.length).toBe(before + 1);
  return error;
}

const point = (ttl?: "1h") => ({ type: "cache_point", cachePoint: ttl ? { type: "default", ttl } : { type: "default" } });

/** `n` words of prose (at least `n` Claude tokens), distinct per `seed` so no test reads another's cache. */
function prose(seed: string, n: number): string {
  const words = ["north", "revenue", "margin", "customers", "quarter", "grew", "because", "pricing"];
  return [seed, ...Array.from({ length: n }, (_, i) => words[i % words.length])].join(" ");
}

function cachedSystem(seed: string, tokens = 1_200): SystemMessage {
  return new SystemMessage({ content: [{ type: "text", text: prose(seed, tokens) }, point()] as never });
}

describe("startConverseEndpoint", () => {
  describe("converse", () => {
    it("returns an answer with usage, stop reason and latency to the real ChatBedrockConverse", async () => {
      const answer = await model().invoke([new SystemMessage("Be brief."), new HumanMessage("What is Threadwise?")]);
      expect(answer.content).toBe("You asked: What is Threadwise?");
      expect(answer.response_metadata).toMatchObject({ stopReason: "end_turn", metrics: { latencyMs: expect.any(Number) } });
      const last = endpoint.requests.at(-1)!;
      expect(answer.usage_metadata).toEqual({
        input_tokens: last.inputTokens,
        output_tokens: expect.any(Number),
        total_tokens: last.inputTokens + answer.usage_metadata!.output_tokens,
      });
      expect(last.inputTokens).toBeGreaterThan(0);
    });

    it("records the request as received: model id, body and a SigV4 signature with the environment's key", async () => {
      await model().invoke([new SystemMessage("Be brief."), new HumanMessage("Record me")]);
      const last = endpoint.requests.at(-1)!;
      expect(last).toMatchObject({ modelId: MODEL_ID, operation: "converse", status: 200 });
      expect(last.body).toEqual({
        messages: [{ role: "user", content: [{ text: "Record me" }] }],
        system: [{ text: "Be brief." }],
        inferenceConfig: { maxTokens: 512, temperature: 0 },
      });
      expect(last.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDLOCALTEST\/\d{8}\/us-east-1\/bedrock\/aws4_request/);
    });

    it("calls a bound tool named in the question, with its required arguments", async () => {
      const answer = await model()
        .bindTools([weather])
        .invoke([new HumanMessage("Use get_weather please")]);
      expect(answer.tool_calls).toEqual([{ id: expect.stringMatching(/^tooluse_/), name: "get_weather", args: { city: "example" }, type: "tool_call" }]);
      expect(answer.response_metadata.stopReason).toBe("tool_use");
      expect(toolSpecs(endpoint.requests.at(-1)!.body!).map((spec) => spec.name)).toEqual(["get_weather"]);
    });

    it("drives a multi-turn conversation with tool use: call, result, answer, follow-up", async () => {
      const chat = model().bindTools([weather]);
      const history: BaseMessage[] = [new HumanMessage("Please call get_weather for Paris")];
      const call = await chat.invoke(history);
      history.push(call);
      for (const toolCall of call.tool_calls ?? []) history.push(await weather.invoke(toolCall));
      const answer = await chat.invoke(history);
      expect(answer.content).toBe('Summary of 1 tool result(s): get_weather returned "Sunny and 21°C in example"');
      history.push(answer, new HumanMessage("Thanks, and tomorrow?"));
      const followUp = await chat.invoke(history);
      expect(followUp.content).toBe("You asked: Thanks, and tomorrow?");
      const sent = endpoint.requests.at(-1)!.body!.messages;
      expect(sent.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant", "user"]);
      expect(sent[2].content).toEqual([{ toolResult: { toolUseId: call.tool_calls![0].id, content: [{ text: "Sunny and 21°C in example" }] } }]);
    });

    it("answers with the scripted replies a test gives, parallel tool calls included", async () => {
      endpoint.setResponder((request) => {
        const last = request.messages.at(-1)!;
        if (last.content.some((b) => "toolResult" in b)) return { text: `Got ${last.content.length} results` };
        return {
          text: "Checking both.",
          toolUses: [
            { name: "get_weather", input: { city: "Oslo" } },
            { name: "get_weather", input: { city: "Rome" } },
          ],
        };
      });
      try {
        const chat = model().bindTools([weather]);
        const history: BaseMessage[] = [new HumanMessage("Weather in Oslo and Rome?")];
        const call = await chat.invoke(history);
        expect(call.tool_calls?.map((c) => c.args)).toEqual([{ city: "Oslo" }, { city: "Rome" }]);
        history.push(call);
        for (const toolCall of call.tool_calls ?? []) history.push(await weather.invoke(toolCall));
        expect((await chat.invoke(history)).content).toBe("Got 2 results");
      } finally {
        endpoint.setResponder(defaultResponder);
      }
    });

    it("answers a scripted service error with its status and error type", async () => {
      endpoint.setResponder(() => ({ error: { status: 424, type: "ModelErrorException", message: "The model failed to respond." } }));
      try {
        const error = await rejection([new HumanMessage("hello")], model());
        expect(error).toMatchObject({ name: "ModelErrorException", $metadata: { httpStatusCode: 424 } });
      } finally {
        endpoint.setResponder(defaultResponder);
      }
    });
  });

  describe("converse-stream", () => {
    it("streams a text answer with usage to ChatBedrockConverse", async () => {
      const chunks: string[] = [];
      for await (const chunk of await model().stream([new HumanMessage("Stream this")])) chunks.push(String(chunk.content));
      expect(chunks.join("")).toBe("You asked: Stream this");
      expect(chunks.filter((c) => c.length > 0)).toEqual(["You ", "asked: ", "Stream ", "this"]);
      expect(endpoint.requests.at(-1)).toMatchObject({ operation: "converse-stream", status: 200 });
    });

    it("throws the exception Bedrock sends inside a stream after the deltas before it", async () => {
      endpoint.setResponder(() => ({
        text: "One two three four",
        streamError: { type: "modelStreamErrorException", message: "The model stopped.", afterDeltas: 2 },
      }));
      const chunks: string[] = [];
      try {
        const error = await (async () => {
          for await (const chunk of await model().stream([new HumanMessage("Stream this")])) chunks.push(String(chunk.content));
        })().catch((e: unknown) => e);
        expect(error).toMatchObject({ name: "ModelStreamErrorException", message: "The model stopped." });
        expect(chunks.join("")).toBe("One two ");
      } finally {
        endpoint.setResponder(defaultResponder);
      }
    });

    it("streams a tool call that an invoke with streaming on returns whole", async () => {
      const streaming = new ChatBedrockConverse({ model: MODEL_ID, region: "us-east-1", maxTokens: 512, streaming: true }).bindTools([weather]);
      const answer = await streaming.invoke([new HumanMessage("get_weather for Paris")]);
      expect(answer.tool_calls).toEqual([expect.objectContaining({ name: "get_weather", args: { city: "example" } })]);
      expect(answer.usage_metadata?.input_tokens).toBe(endpoint.requests.at(-1)!.inputTokens);
      expect(endpoint.requests.at(-1)!.operation).toBe("converse-stream");
    });

    it("rejects what converse rejects, before streaming", async () => {
      const streaming = new ChatBedrockConverse({ model: MODEL_ID, region: "us-east-1", maxTokens: 512, streaming: true });
      const error = await rejection([new HumanMessage("One"), new HumanMessage("Two")], streaming);
      expect(error).toMatchObject({ name: "ValidationException" });
      expect(endpoint.requests.at(-1)!.operation).toBe("converse-stream");
    });
  });

  describe("token counts", () => {
    it("returns input tokens counted by Claude's published tokenizer, not cl100k", async () => {
      const code = "function total(rows) { return rows.map((r) => r.units * r.price).reduce((a, b) => a + b, 0); }\n".repeat(20);
      const answer = await model().invoke([new HumanMessage(code)]);
      expect(answer.usage_metadata?.input_tokens).toBe(countClaudeTokens(code) + 3);
      expect(countClaudeTokens(code)).not.toBe(countTextTokens(code));
    });

    it("returns input tokens with Claude's tool-use system prompt added when tools are offered", async () => {
      const question = [new HumanMessage("Any tools?")];
      const without = (await model().invoke(question)).usage_metadata!.input_tokens;
      const withTools = (
        await model()
          .bindTools([weather])
          .invoke([new HumanMessage("Any tools?")])
      ).usage_metadata!.input_tokens;
      const spec = toolSpecs(endpoint.requests.at(-1)!.body!)[0];
      expect(withTools - without).toBe(TOOL_USE_SYSTEM_PROMPT_TOKENS + countClaudeTokens(JSON.stringify(spec)));
    });

    it("answers CountTokens with the count a Converse request of the same input is billed", async () => {
      const client = new BedrockRuntimeClient({ region: "us-east-1" });
      const converse = { system: [{ text: "Be brief." }], messages: [{ role: "user" as const, content: [{ text: "How did the north region do?" }] }] };
      const counted = await client.send(new CountTokensCommand({ modelId: MODEL_ID, input: { converse } }));
      expect(endpoint.requests.at(-1)).toMatchObject({ operation: "count-tokens", status: 200 });
      expect(counted.inputTokens).toBe(countInputTokens(converse));
      const answer = await model().invoke([new SystemMessage("Be brief."), new HumanMessage("How did the north region do?")]);
      expect(answer.usage_metadata?.input_tokens).toBe(counted.inputTokens);
      client.destroy();
    });
  });

  describe("prompt cache", () => {
    it("returns usage as Bedrock reports it: the prefix up to a cache point written, then read", async () => {
      const messages = [cachedSystem("written-then-read"), new HumanMessage("What changed?")];
      const first = await model().invoke(messages);
      const total = endpoint.requests.at(-1)!.inputTokens;
      const prefix = countClaudeTokens(prose("written-then-read", 1_200));
      expect(endpoint.requests.at(-1)!.body!.system).toEqual([{ text: prose("written-then-read", 1_200) }, { cachePoint: { type: "default" } }]);
      expect(first.usage_metadata).toMatchObject({ input_tokens: total, input_token_details: { cache_read: 0, cache_creation: prefix } });
      expect(first.response_metadata.usage).toMatchObject({
        inputTokens: total - prefix,
        cacheReadInputTokens: 0,
        cacheWriteInputTokens: prefix,
        cacheDetails: [{ ttl: "5m", inputTokens: prefix }],
      });
      const second = await model().invoke(messages);
      expect(second.usage_metadata).toMatchObject({ input_tokens: total, input_token_details: { cache_read: prefix, cache_creation: 0 } });
    });

    it("receives cache points in user, assistant and tool messages as sent, with their TTL", async () => {
      const text = (t: string) => ({ type: "text", text: t });
      await model()
        .bindTools([weather])
        .invoke([
          new SystemMessage({ content: [text("Be brief."), point("1h")] as never }),
          new HumanMessage({ content: [text("Weather?"), point("1h")] as never }),
          new AIMessage({ content: [text("Sunny."), point()] as never }),
          new HumanMessage("And in Paris?"),
          calls("tooluse_cached"),
          new ToolMessage({ tool_call_id: "tooluse_cached", content: [text("Sunny and 21°C"), point()] as never }),
        ]);
      const body = endpoint.requests.at(-1)!.body!;
      expect(body.system).toEqual([{ text: "Be brief." }, { cachePoint: { type: "default", ttl: "1h" } }]);
      expect(body.messages.map((m) => m.content)).toEqual([
        [{ text: "Weather?" }, { cachePoint: { type: "default", ttl: "1h" } }],
        [{ text: "Sunny." }, { cachePoint: { type: "default" } }],
        [{ text: "And in Paris?" }],
        [{ toolUse: { toolUseId: "tooluse_cached", name: "get_weather", input: { city: "Paris" } } }],
        [{ toolResult: { toolUseId: "tooluse_cached", content: [{ text: "Sunny and 21°C" }] } }, { cachePoint: { type: "default" } }],
      ]);
      expect(endpoint.requests.at(-1)!.status).toBe(200);
    });

    it("reads, by looking back from a point, the prefix an earlier request ended with though no point marks it now", async () => {
      const text = (t: string) => ({ type: "text", text: t });
      const question = new HumanMessage({ content: [text(prose("look-back", 1_200)), point()] as never });
      await model().invoke([question]);
      const written = endpoint.requests.at(-1)!.cache!.cacheWriteInputTokens;
      const next = await model().invoke([
        new HumanMessage(prose("look-back", 1_200)),
        new AIMessage("Noted."),
        new HumanMessage({ content: [text("And then?"), point()] as never }),
      ]);
      expect(next.usage_metadata?.input_token_details?.cache_read).toBe(written);
    });

    it("caches nothing at a point under the minimum tokens per checkpoint", async () => {
      const answer = await model().invoke([new SystemMessage({ content: [{ type: "text", text: "Short." }, point()] as never }), new HumanMessage("Hi")]);
      expect(answer.usage_metadata?.input_token_details).toEqual({ cache_read: 0, cache_creation: 0 });
    });

    it("writes again once the prefix has been unused for its TTL, by the endpoint's clock", async () => {
      const messages = [cachedSystem("expires"), new HumanMessage("Still there?")];
      await model().invoke(messages);
      clock.now += TTL_MS["5m"] - 1_000;
      expect((await model().invoke(messages)).usage_metadata?.input_token_details?.cache_read).toBeGreaterThan(0);
      clock.now += TTL_MS["5m"] + 1_000;
      expect((await model().invoke(messages)).usage_metadata?.input_token_details).toMatchObject({ cache_read: 0, cache_creation: expect.any(Number) });
    });

    it("answers 400 ValidationException to a fifth cache point", async () => {
      const text = (t: string) => ({ type: "text", text: t });
      const error = await rejection(
        [
          new SystemMessage({ content: [text("One."), point(), text("Two."), point()] as never }),
          new HumanMessage({ content: [text("Three."), point()] as never }),
          new AIMessage({ content: [text("Four."), point()] as never }),
          new HumanMessage({ content: [text("Five."), point()] as never }),
        ],
        model(),
      );
      expect(error).toMatchObject({ name: "ValidationException", $metadata: { httpStatusCode: 400 } });
      expect(error?.message).toContain("A maximum of 4 blocks with cache_control may be provided. Found 5.");
    });

    it("answers 400 ValidationException to a one-hour point after a five-minute one", async () => {
      const error = await rejection(
        [
          new SystemMessage({ content: [{ type: "text", text: "Be brief." }, point()] as never }),
          new HumanMessage({ content: [{ type: "text", text: "Hi" }, point("1h")] as never }),
        ],
        model(),
      );
      expect(error?.message).toContain("ttl='1h' must not come after");
    });
  });

  describe("rejections", () => {
    it("answers 400 with x-amzn-errortype ValidationException and a {message} body", async () => {
      const session = http2.connect(endpoint.url);
      try {
        const stream = session.request({
          ":method": "POST",
          ":path": `/model/${encodeURIComponent(MODEL_ID)}/converse`,
          "content-type": "application/json",
          authorization: "Bearer test-token",
        });
        stream.end(JSON.stringify({ messages: [{ role: "assistant", content: [{ text: "hi" }] }], inferenceConfig: { maxTokens: 10 } }));
        const [headers, body] = await Promise.all([
          new Promise<http2.IncomingHttpHeaders>((resolve) => stream.on("response", resolve)),
          new Promise<string>((resolve) => {
            let text = "";
            stream.on("data", (chunk: Buffer) => (text += chunk.toString()));
            stream.on("end", () => resolve(text));
          }),
        ]);
        expect(headers[":status"]).toBe(400);
        expect(String(headers["x-amzn-errortype"]).split(":")[0]).toBe("ValidationException");
        expect(Object.keys(JSON.parse(body))).toEqual(["message"]);
      } finally {
        session.close();
      }
    });

    it("rejects a conversation whose first message is not a user message", async () => {
      const error = await rejection([new AIMessage("I start."), new HumanMessage("Then me.")]);
      expect(error).toMatchObject({ name: "ValidationException", $metadata: { httpStatusCode: 400 } });
      expect(error?.message).toContain("must start with a user message");
    });

    it("rejects roles that do not alternate", async () => {
      const error = await rejection([new HumanMessage("One"), new HumanMessage("Two")]);
      expect(error?.message).toContain("must alternate between user and assistant");
    });

    it("rejects a toolUse not answered by a toolResult in the next message", async () => {
      const error = await rejection([new HumanMessage("Weather?"), calls("tooluse_a"), new HumanMessage("Never mind")]);
      expect(error?.message).toContain("Expected toolResult blocks at messages.2.content for the following Ids: tooluse_a");
    });

    it("rejects a toolResult whose id differs from the toolUse's", async () => {
      const error = await rejection([new HumanMessage("Weather?"), calls("tooluse_a"), new ToolMessage({ tool_call_id: "tooluse_A", content: "Sunny" })]);
      expect(error?.message).toContain("tooluse_a");
      expect(error).toMatchObject({ name: "ValidationException" });
    });

    it("rejects a toolResult without a toolUse before it", async () => {
      const error = await rejection([
        new HumanMessage("Weather?"),
        new AIMessage("Let me see."),
        new ToolMessage({ tool_call_id: "tooluse_x", content: "Sunny" }),
      ]);
      expect(error?.message).toContain("exceeds the number of toolUse blocks");
    });

    it("rejects a message with empty content", async () => {
      const error = await rejection([new HumanMessage({ content: [] })]);
      expect(error?.message).toContain("The content field in the Message object at messages.0 is empty");
    });

    it("rejects a blank text block", async () => {
      const error = await rejection([new HumanMessage("  \n ")]);
      expect(error?.message).toContain("messages.0.content.0 is blank");
    });

    it("rejects tool blocks sent without toolConfig", async () => {
      const error = await rejection(
        [new HumanMessage("Weather?"), calls("tooluse_b"), new ToolMessage({ tool_call_id: "tooluse_b", content: "Sunny" })],
        model(),
      );
      expect(error?.message).toContain("The toolConfig field must be defined");
    });

    it("rejects a conversation whose last message is not a user message", async () => {
      const error = await rejection([new HumanMessage("Hi"), new AIMessage("Hello")]);
      expect(error?.message).toContain("must end with a user message");
    });

    it("rejects input over the context window", async () => {
      const error = await rejection([new HumanMessage("many words ".repeat(6_000))]);
      expect(error?.message).toMatch(/prompt is too long: \d+ tokens > 5000 maximum/);
    });

    it("rejects input that fits only without maxTokens", async () => {
      const error = await rejection(
        [new HumanMessage("many words ".repeat(1_500))],
        new ChatBedrockConverse({ model: MODEL_ID, region: "us-east-1", maxTokens: 4_000 }),
      );
      expect(error?.message).toMatch(/input length and `max_tokens` exceed context limit: \d+ \+ 4000 > 5000/);
    });

    it("rejects a request without inferenceConfig.maxTokens", async () => {
      const error = await rejection([new HumanMessage("Hi")], model({}));
      expect(error?.message).toContain("maxTokens is required");
    });

    it("records each rejection with its status and error type", async () => {
      await rejection([new HumanMessage("One"), new HumanMessage("Two")]);
      expect(endpoint.requests.at(-1)).toMatchObject({ status: 400, errorType: "ValidationException", errorMessage: expect.stringContaining("alternate") });
    });
  });
});
