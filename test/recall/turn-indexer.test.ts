import { BedrockRuntimeClient } from "@aws-sdk/client-bedrock-runtime";
import { HumanMessage } from "@langchain/core/messages";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildModelView } from "../../lib/model-view/build-model-view.js";
import { BedrockEmbedder } from "../../lib/recall/embedder.js";
import {
  DEFAULT_RECALL_ARGS_CHARS,
  DEFAULT_RECALL_PREVIEW_CHARS,
  RECALL_TOOL_TERM_WEIGHT,
  recallEntryTerms,
  recallText,
  TurnIndexer,
} from "../../lib/recall/turn-indexer.js";
import { MessageStore } from "../../lib/store/message-store.js";
import { RecallIndexStore } from "../../lib/store/recall-index-store.js";
import { type ModelCallRecord, type ViewMessage, ZERO_USAGE } from "../../lib/store/turn-record.js";
import { TurnStore } from "../../lib/store/turn-store.js";
import { heldFence } from "../support/fences.js";
import { startEmbeddingsEndpoint, TITAN_V2_MODEL_ID, type EmbeddingsEndpoint } from "../support/embeddings-endpoint.js";
import { useStoreFixture } from "../support/store-fixture.js";

const { stores } = useStoreFixture("turn_indexer", (db) => ({ index: new RecallIndexStore(db), messages: new MessageStore(db), turns: new TurnStore(db) }));
const { index, messages, turns } = stores;
const fence = heldFence("c");
const at = (minute: number) => new Date(Date.UTC(2026, 9, 1, 9, minute));

let endpoint: EmbeddingsEndpoint;
let client: BedrockRuntimeClient;
beforeAll(async () => {
  endpoint = await startEmbeddingsEndpoint();
  const credentials = { accessKeyId: "AKIDLOCALTEST", secretAccessKey: "local-test-secret" };
  client = new BedrockRuntimeClient({ endpoint: endpoint.url, region: "us-east-1", credentials, maxAttempts: 1 });
});
afterAll(async () => {
  client.destroy();
  await endpoint.close();
});

const STATS = buildModelView([new HumanMessage("q")], {
  systemPrompt: "",
  finishedTurns: 1,
  toolOutputTokens: 100,
  totalBudget: 1_000,
  toolSchemaTokens: 0,
}).stats;

/** A turn asked at `minute`, left in `status`, its last model call sent `view`. */
async function turn(
  id: string,
  minute: number,
  question: string,
  status: "completed" | "failed" | "superseded" | "running",
  view: ViewMessage[] = [],
): Promise<void> {
  const claim = await turns.claim(id, fence, {}, at(minute));
  if (!claim.claimed) throw new Error("not claimed");
  await messages.append({ turnId: id, seq: minute, role: "user", content: question }, fence, at(minute));
  const call: ModelCallRecord = { turnId: id, index: 0, startedAt: at(minute), durationMs: 1, view, stats: STATS, usage: ZERO_USAGE, toolCalls: [] };
  await turns.recordModelCall(claim.turn, call, fence);
  if (status === "completed") await turns.complete(claim.turn, { answer: `answer to ${question}`, usage: ZERO_USAGE, toolCalls: 0, durationMs: 1 }, fence);
  if (status === "failed") await turns.fail(claim.turn, { code: "model_unreachable", message: "down" }, fence);
  if (status === "superseded") await turns.supersede(claim.turn, fence);
}

const indexer = (fields: Partial<ConstructorParameters<typeof TurnIndexer>[0]> = {}) => new TurnIndexer({ index, messages, turns, ...fields });

describe("recallText", () => {
  it("returns the question, the answer and each tool call with its output's start, leaving out empty parts", () => {
    expect(recallText({ question: "Q", answer: "", tools: [{ name: "sql_query", args: "{}", preview: "3 rows" }] })).toBe("Q\nsql_query {}\n3 rows");
  });
});

describe("recallEntryTerms", () => {
  it("returns the question's and answer's terms at full weight and a tool call's at RECALL_TOOL_TERM_WEIGHT, the length their sum", () => {
    const entry = recallEntryTerms({
      question: "Central revenue?",
      answer: "Central brought in 4,755,149.09.",
      tools: [{ name: "sql_query", args: "{}", preview: "Central | North" }],
    });
    expect(entry.terms.get("central")).toBe(2 + RECALL_TOOL_TERM_WEIGHT);
    expect(entry.terms.get("north")).toBe(RECALL_TOOL_TERM_WEIGHT);
    expect(entry.length).toBe([...entry.terms.values()].reduce((a, b) => a + b, 0));
  });
});

describe("TurnIndexer", () => {
  describe("indexFinishedTurns", () => {
    it("returns how many finished turns it added, numbered in the order asked, a failed one without its answer", async () => {
      await turn("t1", 1, "first question?", "completed");
      await turn("t2", 2, "second question?", "failed");
      expect(await indexer().indexFinishedTurns("c", fence)).toBe(2);
      const records = await index.records("c", ["t1", "t2"]);
      expect(records.map((r) => [r._id, r.turnNumber, r.status, r.question, r.answer])).toEqual([
        ["t1", 1, "completed", "first question?", "answer to first question?"],
        ["t2", 2, "failed", "second question?", ""],
      ]);
      expect(await indexer().indexFinishedTurns("c", fence)).toBe(0);
    });

    it("stops at a turn still running and numbers it in its place once it has finished", async () => {
      await turn("t1", 1, "first?", "completed");
      await turn("t2", 2, "second?", "running");
      await turn("t3", 3, "third?", "completed");
      expect(await indexer().indexFinishedTurns("c", fence)).toBe(1);
      const running = await turns.claim("t2", heldFence("c", 2));
      if (!running.claimed) throw new Error("not claimed");
      await turns.complete(running.turn, { answer: "late", usage: ZERO_USAGE, toolCalls: 0, durationMs: 1 }, heldFence("c", 2));
      expect(await indexer().indexFinishedTurns("c", fence)).toBe(2);
      expect((await index.records("c", ["t2", "t3"])).map((r) => [r._id, r.turnNumber])).toEqual([
        ["t2", 2],
        ["t3", 3],
      ]);
    });

    it("leaves out a superseded turn without taking a number", async () => {
      await turn("t1", 1, "replaced?", "superseded");
      await turn("t2", 2, "kept?", "completed");
      expect(await indexer().indexFinishedTurns("c", fence)).toBe(1);
      expect((await index.entries("c")).map((e) => [e.turnId, e.turnNumber])).toEqual([["t2", 1]]);
    });

    it("keeps the tool calls of the active turn in the last call's view, their arguments cut and outputs whole in chunks", async () => {
      const view: ViewMessage[] = [
        { role: "user", content: "an earlier question" },
        { role: "assistant", content: "", toolCalls: [{ id: "old", name: "old_tool", args: {} }] },
        { role: "tool", content: "old output", toolCallId: "old", toolName: "old_tool" },
        { role: "user", content: "this question" },
        { role: "assistant", content: "", toolCalls: [{ id: "c1", name: "sql_query", args: { sql: "x".repeat(1_000) } }] },
        { role: "tool", content: "y".repeat(1_000), toolCallId: "c1", toolName: "sql_query" },
      ];
      await turn("t1", 1, "this question", "completed", view);
      await indexer().indexFinishedTurns("c", fence);
      const [record] = await index.records("c", ["t1"]);
      expect(record.tools).toEqual([
        {
          name: "sql_query",
          args: JSON.stringify({ sql: "x".repeat(1_000) }).slice(0, DEFAULT_RECALL_ARGS_CHARS),
          preview: "y".repeat(DEFAULT_RECALL_PREVIEW_CHARS),
          // Past the preview, the rest of the output (issue 46: before, it was cut at 400 characters).
          chunks: ["y".repeat(1_000 - DEFAULT_RECALL_PREVIEW_CHARS)],
        },
      ]);
    });

    it("stores each entry's vector from the embedder", async () => {
      await turn("t1", 1, "the warehouse lease", "completed");
      await indexer({ embedder: new BedrockEmbedder({ modelId: TITAN_V2_MODEL_ID, client, dimensions: 256 }) }).indexFinishedTurns("c", fence);
      expect((await index.entries("c"))[0].vector).toHaveLength(256);
      expect(endpoint.requests.at(-1)?.inputText).toBe("the warehouse lease\nanswer to the warehouse lease");
    });

    it("indexes a turn without a vector when it cannot be embedded, and logs the model and error name only", async () => {
      const warnings: Record<string, unknown>[] = [];
      const logger = { info: () => undefined, error: () => undefined, warn: (_: string, fields: Record<string, unknown>) => void warnings.push(fields) };
      await turn("t1", 1, "secret question", "completed");
      endpoint.throttleNext(1);
      const embedder = new BedrockEmbedder({ modelId: TITAN_V2_MODEL_ID, client, dimensions: 256 });
      expect(await indexer({ embedder, logger }).indexFinishedTurns("c", fence)).toBe(1);
      expect((await index.entries("c"))[0].vector).toBeUndefined();
      expect(warnings).toEqual([{ conversationId: "c", modelId: TITAN_V2_MODEL_ID, error: "EmbeddingError" }]);
    });
  });
});
