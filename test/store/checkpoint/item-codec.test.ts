import { ChatBedrockConverse } from "@langchain/aws";
import { AIMessage, AIMessageChunk, HumanMessage, RemoveMessage, SystemMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { messagesStateReducer } from "@langchain/langgraph";
import { JsonPlusSerializer } from "@langchain/langgraph-checkpoint";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ItemCodec } from "../../../lib/store/checkpoint/item-codec.js";
import { prefixDigests } from "../../../lib/store/checkpoint/list-links.js";
import { startConverseEndpoint, type ConverseEndpoint } from "../../support/converse-endpoint.js";

const serde = new JsonPlusSerializer();
const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
const MODEL_ID = "us.anthropic.claude-sonnet-4-20250514-v1:0";

let endpoint: ConverseEndpoint;
beforeAll(async () => {
  endpoint = await startConverseEndpoint({
    respond: (request) =>
      request.messages.at(-1)?.content.some((b) => "toolResult" in b) ? { text: "It is sunny." } : { toolUses: [{ name: "weather", input: { city: "Oslo" } }] },
  });
});
afterAll(() => endpoint.close());

/** Messages as the real `ChatBedrockConverse` returns them from the local Converse endpoint: a tool call, a streamed one, an answer. */
async function bedrockMessages(): Promise<BaseMessage[]> {
  for (const [name, value] of Object.entries(endpoint.environment)) vi.stubEnv(name, value);
  try {
    const model = new ChatBedrockConverse({ model: MODEL_ID, region: "us-east-1", maxTokens: 256 }).bindTools([
      { name: "weather", description: "Weather of a city", schema: { type: "object", properties: { city: { type: "string" } } } },
    ]);
    const question = new HumanMessage("Weather in Oslo?");
    const call = await model.invoke([question]);
    let streamed: AIMessageChunk | undefined;
    for await (const chunk of await model.stream([question])) streamed = streamed === undefined ? chunk : streamed.concat(chunk);
    const result = new ToolMessage({ content: "sunny", tool_call_id: (call as AIMessage).tool_calls?.[0]?.id ?? "" });
    const answer = await model.invoke([question, call, result]);
    // What the graph stores: the reducer turns a chunk into its message class.
    const stored = messagesStateReducer([], [question, call, streamed as AIMessageChunk, result, answer]);
    return [call, streamed as AIMessageChunk, answer, ...stored];
  } finally {
    vi.unstubAllEnvs();
  }
}

/** Every message type the graph writes to a list channel, built as product code and LangChain build them. */
function builtMessages(): BaseMessage[] {
  return [
    new HumanMessage("hello"),
    new HumanMessage({ content: [{ type: "text", text: "hi" }], id: "h1" }),
    new AIMessage("plain"),
    new AIMessage({
      content: "",
      tool_calls: [{ id: "c1", name: "lookup", args: { q: 1 } }],
      usage_metadata: undefined,
      response_metadata: {},
      id: undefined,
      name: undefined,
    }),
    new AIMessage({
      content: "done",
      usage_metadata: { input_tokens: 3, output_tokens: 4, total_tokens: 7 },
      response_metadata: { stopReason: "end_turn" },
      id: "a1",
    }),
    new ToolMessage({ content: "result", tool_call_id: "c1", status: "success", artifact: { rows: [1, 2], note: undefined } }),
    new ToolMessage({ content: "failed", tool_call_id: "c2", status: "error" }),
    new SystemMessage("be brief"),
    new RemoveMessage({ id: "h1" }),
    new AIMessageChunk({ content: "part", tool_call_chunks: [{ id: "c3", name: "lookup", args: "{}", index: 0 }] }),
  ];
}

describe("ItemCodec", () => {
  describe("serialize", () => {
    it("returns bytes that a fresh process loads and serializes to the same bytes, for every message type", async () => {
      const messages = [...builtMessages(), ...(await bedrockMessages())];
      for (const message of messages) {
        const stored = await new ItemCodec(serde).serialize(message);
        // Another process: loads the stored bytes with the plain serializer, knows nothing of the object.
        const loaded = await serde.loadsTyped(stored.type, stored.bytes);
        const again = await new ItemCodec(serde).serialize(loaded);
        expect({ type: message.getType(), bytes: text(again.bytes) }).toEqual({ type: message.getType(), bytes: text(stored.bytes) });
      }
    });

    it("returns the bytes an item was loaded from, also when they are not canonical", async () => {
      // As earlier releases stored a Bedrock answer: with `"name":{"lc":2,"type":"undefined"}`.
      const [type, legacy] = await serde.dumpsTyped(new AIMessage({ content: "x", name: undefined, id: "a" }));
      expect(text(legacy)).toContain('"type":"undefined"');
      const codec = new ItemCodec(serde);
      const loaded = await codec.load(type, legacy);
      expect(text((await codec.serialize(loaded)).bytes)).toBe(text(legacy));
    });

    it("serializes again an item whose id changed since it was remembered", async () => {
      const codec = new ItemCodec(serde);
      const message = new HumanMessage("no id yet");
      await codec.serialize(message);
      messagesStateReducer([message], []);
      expect(text((await codec.serialize(message)).bytes)).toContain(String(message.id));
    });
  });

  describe("digests", () => {
    it("returns the prefix digests of the serialized list, also after items were replaced or reordered", async () => {
      const codec = new ItemCodec(serde);
      const messages = builtMessages();
      const check = async (list: BaseMessage[]) => {
        const serialized = await Promise.all(list.map((m) => codec.serialize(m)));
        expect(codec.digests(list, serialized)).toEqual(prefixDigests(serialized));
      };
      await check(messages);
      await check([...messages, new HumanMessage("more")]);
      await check([messages[1], messages[0], ...messages.slice(2)]);
      await check([new HumanMessage("replaced"), ...messages.slice(1)]);
      await check(messages.slice(3));
    });
  });
});
