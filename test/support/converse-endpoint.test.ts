import http2 from "node:http2";
import { ChatBedrockConverse } from "@langchain/aws";
import { AIMessage, HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { z } from "zod";
import { defaultResponder, startConverseEndpoint, type ConverseEndpoint } from "./converse-endpoint.js";

const MODEL_ID = "us.anthropic.claude-sonnet-4-20250514-v1:0";

let endpoint: ConverseEndpoint;

beforeAll(async () => {
  endpoint = await startConverseEndpoint({ contextWindowTokens: 5_000 });
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
      const answer = await model().bindTools([weather]).invoke([new HumanMessage("Use get_weather please")]);
      expect(answer.tool_calls).toEqual([{ id: expect.stringMatching(/^tooluse_/), name: "get_weather", args: { city: "example" }, type: "tool_call" }]);
      expect(answer.response_metadata.stopReason).toBe("tool_use");
      expect(endpoint.requests.at(-1)!.body?.toolConfig?.tools.map((t) => t.toolSpec.name)).toEqual(["get_weather"]);
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
        return { text: "Checking both.", toolUses: [{ name: "get_weather", input: { city: "Oslo" } }, { name: "get_weather", input: { city: "Rome" } }] };
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
      expect(endpoint.requests.at(-1)).toMatchObject({ operation: "converse-stream", status: 200 });
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
      const error = await rejection([
        new HumanMessage("Weather?"),
        calls("tooluse_a"),
        new ToolMessage({ tool_call_id: "tooluse_A", content: "Sunny" }),
      ]);
      expect(error?.message).toContain("tooluse_a");
      expect(error).toMatchObject({ name: "ValidationException" });
    });

    it("rejects a toolResult without a toolUse before it", async () => {
      const error = await rejection([new HumanMessage("Weather?"), new AIMessage("Let me see."), new ToolMessage({ tool_call_id: "tooluse_x", content: "Sunny" })]);
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
      const error = await rejection([new HumanMessage("many words ".repeat(1_500))], new ChatBedrockConverse({ model: MODEL_ID, region: "us-east-1", maxTokens: 4_000 }));
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
