import { BedrockRuntimeClient } from "@aws-sdk/client-bedrock-runtime";
import { AIMessage, HumanMessage, SystemMessage, ToolMessage } from "@langchain/core/messages";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { bedrockTokenCounter } from "../../lib/agent/bedrock-token-counter.js";
import type { FunctionTool } from "../../lib/agent/local-chat-model.js";
import { countInputTokens, startConverseEndpoint, type ConverseEndpoint } from "../support/converse-endpoint.js";

const MODEL_ID = "us.anthropic.claude-sonnet-4-20250514-v1:0";
let endpoint: ConverseEndpoint;
let client: BedrockRuntimeClient;

beforeAll(async () => {
  endpoint = await startConverseEndpoint();
  // The AWS SDK reads AWS_ENDPOINT_URL_BEDROCK_RUNTIME itself: no endpoint is passed to the client.
  for (const [name, value] of Object.entries(endpoint.environment)) vi.stubEnv(name, value);
  client = new BedrockRuntimeClient({ region: "us-east-1" });
});

afterAll(async () => {
  client?.destroy();
  vi.unstubAllEnvs();
  await endpoint.close();
});

const weather: FunctionTool = {
  type: "function",
  function: { name: "weather", description: "The weather in a city", parameters: { type: "object", properties: { city: { type: "string" } } } },
};

describe("bedrockTokenCounter", () => {
  it("returns CountTokens' count of the view in the Converse shape: system lifted out, consecutive results in one user message", async () => {
    const view = [
      new SystemMessage("Be brief."),
      new HumanMessage("Weather in Oslo and Rome?"),
      new AIMessage({
        content: "Checking both.",
        tool_calls: [
          { id: "c1", name: "weather", args: { city: "Oslo" } },
          { id: "c2", name: "weather", args: { city: "Rome" } },
        ],
      }),
      new ToolMessage({ tool_call_id: "c1", content: "Rain, 4°C" }),
      new ToolMessage({ tool_call_id: "c2", content: "Sun, 19°C" }),
      new HumanMessage({ content: [{ type: "text", text: "And tomorrow?" }] }),
    ];
    const tokens = await bedrockTokenCounter(client, MODEL_ID)(view, [weather]);
    const sent = endpoint.requests.at(-1)!;
    expect(sent).toMatchObject({ operation: "count-tokens", modelId: MODEL_ID, status: 200 });
    expect(sent.body?.system).toEqual([{ text: "Be brief." }]);
    expect(sent.body?.messages).toEqual([
      { role: "user", content: [{ text: "Weather in Oslo and Rome?" }] },
      {
        role: "assistant",
        content: [
          { text: "Checking both." },
          { toolUse: { toolUseId: "c1", name: "weather", input: { city: "Oslo" } } },
          { toolUse: { toolUseId: "c2", name: "weather", input: { city: "Rome" } } },
        ],
      },
      {
        role: "user",
        content: [{ toolResult: { toolUseId: "c1", content: [{ text: "Rain, 4°C" }] } }, { toolResult: { toolUseId: "c2", content: [{ text: "Sun, 19°C" }] } }],
      },
      { role: "user", content: [{ text: "And tomorrow?" }] },
    ]);
    expect(sent.body?.toolConfig?.tools).toEqual([
      { toolSpec: { name: "weather", description: "The weather in a city", inputSchema: { json: weather.function.parameters } } },
    ]);
    expect(tokens).toBe(countInputTokens(sent.body!));
  });

  it("sends no tool configuration when the view offers no tools, and no empty text block", async () => {
    await bedrockTokenCounter(client, MODEL_ID)([new HumanMessage("Hi"), new AIMessage({ content: "", tool_calls: [] }), new HumanMessage("Still there?")], []);
    const sent = endpoint.requests.at(-1)!.body!;
    expect(sent.toolConfig).toBeUndefined();
    expect(sent.messages[1]).toEqual({ role: "assistant", content: [] });
  });
});
