import { BedrockRuntimeClient } from "@aws-sdk/client-bedrock-runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConversationSearch } from "../../lib/recall/conversation-search.js";
import { BedrockEmbedder } from "../../lib/recall/embedder.js";
import { termFrequencies } from "../../lib/recall/recall-terms.js";
import { formatSearchOutcome } from "../../lib/recall/search-conversation-tool.js";
import { recallText } from "../../lib/recall/turn-indexer.js";
import { countTextTokens } from "../../lib/model-view/token-counter.js";
import { RecallIndexStore, type RecallTurnDocument } from "../../lib/store/recall-index-store.js";
import { startEmbeddingsEndpoint, TITAN_V2_MODEL_ID, type EmbeddingsEndpoint } from "../support/embeddings-endpoint.js";
import { openTestDatabase, type TestDatabase } from "../support/mongo.js";

let database: TestDatabase;
let store: RecallIndexStore;
let endpoint: EmbeddingsEndpoint;
let embedder: BedrockEmbedder;

const DISTRACTORS = [
  "Can you list the open support tickets for the Lisbon office?",
  "Please draft a short note thanking the design team for the new logo.",
  "How many laptops did we order for the interns this spring?",
  "Summarise yesterday's meeting about the warehouse lease renewal.",
  "What is the weather usually like in Oslo in March?",
  "Remind the finance team to close the ledger on Friday.",
  "Which printers on the third floor are out of toner?",
  "Translate the welcome email into Spanish for the Madrid hires.",
];

async function addTurns(conversationId: string, questions: string[], withVectors: boolean): Promise<RecallTurnDocument[]> {
  const records: RecallTurnDocument[] = [];
  for (const [i, question] of questions.entries()) {
    const record: RecallTurnDocument = {
      _id: `${conversationId}-t${i + 1}`,
      conversationId,
      turnNumber: i + 1,
      at: new Date(Date.UTC(2026, 9, 1, 9, i)),
      status: "completed",
      question,
      answer: "Noted.",
      tools: [],
    };
    const terms = termFrequencies(recallText(record));
    const length = [...terms.values()].reduce((a, b) => a + b, 0);
    await store.add(record, { length, terms, vector: withVectors ? await embedder.embed(recallText(record)) : undefined });
    records.push(record);
  }
  return records;
}

beforeAll(async () => {
  database = await openTestDatabase("recall_search");
  store = new RecallIndexStore(database.db, { segmentTurns: 4 });
  await store.setup();
  endpoint = await startEmbeddingsEndpoint();
  const client = new BedrockRuntimeClient({
    endpoint: endpoint.url,
    region: "us-east-1",
    credentials: { accessKeyId: "AKIDLOCALTEST", secretAccessKey: "local-test-secret" },
    maxAttempts: 1,
  });
  embedder = new BedrockEmbedder({ modelId: TITAN_V2_MODEL_ID, client, dimensions: 256 });
});
afterAll(async () => {
  await endpoint.close();
  await database.cleanup();
});

describe("ConversationSearch", () => {
  describe("search", () => {
    it("returns the turn that shares the query's word stems first, lexically", async () => {
      await addTurns("lexical", ["We decided to exclude returns from the revenue figures.", ...DISTRACTORS], false);
      const outcome = await new ConversationSearch({ index: store }).search({ conversationId: "lexical", query: "excluding returned orders", limit: 3, visibleTurns: 0 });
      expect(outcome.ranking).toBe("lexical");
      expect(outcome.hits[0].record.turnNumber).toBe(1);
      expect(outcome.searchedTurns).toBe(DISTRACTORS.length + 1);
    });

    it("returns a paraphrased turn first when embeddings are configured, where lexical search finds nothing", async () => {
      await addTurns("paraphrase", [...DISTRACTORS.slice(0, 4), "I purchased a new automobile for the sales team.", ...DISTRACTORS.slice(4)], true);
      const request = { conversationId: "paraphrase", query: "Which car did I buy?", limit: 3, visibleTurns: 0 };
      const lexical = await new ConversationSearch({ index: store }).search(request);
      expect(lexical.hits).toEqual([]);
      const semantic = await new ConversationSearch({ index: store, embedder }).search(request);
      expect(semantic.ranking).toBe("lexical and semantic");
      expect(semantic.hits[0].record.turnNumber).toBe(5);
      expect(semantic.hits[0].semantic).toBeGreaterThan(semantic.hits[1].semantic ?? 1);
    });

    it("returns lexical results and says so when the query cannot be embedded", async () => {
      await addTurns("throttled", ["We decided to exclude returns from the revenue figures.", ...DISTRACTORS], true);
      endpoint.throttleNext(1);
      const outcome = await new ConversationSearch({ index: store, embedder }).search({ conversationId: "throttled", query: "returns", limit: 3, visibleTurns: 0 });
      expect(outcome).toMatchObject({ ranking: "lexical", semanticUnavailable: true });
      expect(outcome.hits.map((h) => h.record.turnNumber)).toEqual([1]);
      expect(formatSearchOutcome("returns", outcome, 1_500)).toContain("Semantic search was unavailable");
    });

    it("returns no turn the model already sees", async () => {
      await addTurns("visible", [...DISTRACTORS, "The budget owner is Priya."], false);
      const search = new ConversationSearch({ index: store });
      const hidden = await search.search({ conversationId: "visible", query: "budget owner", limit: 3, visibleTurns: 1 });
      expect(hidden).toMatchObject({ hits: [], searchedTurns: DISTRACTORS.length, indexedTurns: DISTRACTORS.length + 1 });
      const shown = await search.search({ conversationId: "visible", query: "budget owner", limit: 3, visibleTurns: 0 });
      expect(shown.hits.map((h) => h.record.question)).toEqual(["The budget owner is Priya."]);
    });

    it("returns turns with a quoted phrase before turns that only share its words", async () => {
      await addTurns("phrase", ["Numbers for EMEA came late again.", "Please use the EMEA numbers.", "Use numbers, not words, for EMEA: use numbers for EMEA."], false);
      const search = new ConversationSearch({ index: store });
      const words = await search.search({ conversationId: "phrase", query: "use the EMEA numbers", limit: 3, visibleTurns: 0 });
      expect(words.hits[0].record.turnNumber).toBe(3);
      const phrase = await search.search({ conversationId: "phrase", query: '"use the EMEA numbers"', limit: 3, visibleTurns: 0 });
      expect(phrase.hits.map((h) => h.record.turnNumber)).toEqual([2, 3, 1]);
    });

    it("returns only the caller's conversation's turns, whatever the other conversations say", async () => {
      await addTurns("mine", ["Lunch was fine.", ...DISTRACTORS], true);
      await addTurns("theirs", ["The launch code for the demo is tangerine."], true);
      const outcome = await new ConversationSearch({ index: store, embedder }).search({ conversationId: "mine", query: "launch code tangerine", limit: 5, visibleTurns: 0 });
      expect(outcome.hits.length).toBe(5);
      expect(outcome.hits.every((h) => h.record.conversationId === "mine")).toBe(true);
      expect(await store.records("mine", ["theirs-t1"])).toEqual([]);
    });
  });
});

describe("formatSearchOutcome", () => {
  it("returns every match with its turn number and time, within the token ceiling", async () => {
    const long = "The forecast assumptions were discussed at length. ".repeat(400);
    await addTurns("budget", [long, long, long, ...DISTRACTORS], false);
    const outcome = await new ConversationSearch({ index: store }).search({ conversationId: "budget", query: "forecast assumptions", limit: 3, visibleTurns: 0 });
    const text = formatSearchOutcome("forecast assumptions", outcome, 1_500);
    expect(countTextTokens(text)).toBeLessThanOrEqual(1_500);
    expect(countTextTokens(text)).toBeGreaterThan(1_300);
    for (const n of [1, 2, 3]) expect(text).toContain(`[Turn ${n}, 2026-10-01 09:0${n - 1} UTC]`);
  });

  it("returns a sentence saying there is nothing to search while every turn is in view", () => {
    expect(formatSearchOutcome("x", { hits: [], searchedTurns: 0, indexedTurns: 4, ranking: "lexical" }, 1_500)).toBe(
      "Nothing to search: all 4 earlier turns are already in view.",
    );
  });
});
