import { BedrockRuntimeClient } from "@aws-sdk/client-bedrock-runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bm25, ConversationSearch, MAX_QUERY_TERMS } from "../../lib/recall/conversation-search.js";
import type { Embedder } from "../../lib/recall/embedder.js";
import type { RecallEntry } from "../../lib/store/recall-index-store.js";
import { BedrockEmbedder } from "../../lib/recall/embedder.js";
import { termFrequencies } from "../../lib/recall/recall-terms.js";
import { recallEntryTerms, recallText, recallToolOutputs } from "../../lib/recall/turn-indexer.js";
import { RecallIndexStore, type RecallTurnDocument } from "../../lib/store/recall-index-store.js";
import { startEmbeddingsEndpoint, TITAN_V2_MODEL_ID, type EmbeddingsEndpoint } from "../support/embeddings-endpoint.js";
import { heldFence } from "../support/fences.js";
import { useStoreFixture } from "../support/store-fixture.js";

const { stores } = useStoreFixture("recall_search", (db) => ({ store: new RecallIndexStore(db, { segmentTurns: 4 }) }));
const { store } = stores;
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

/** Adds the turns, with vectors from the embeddings stand-in (`true`) or from the given embedder. */
async function addTurns(conversationId: string, questions: string[], withVectors: boolean | Embedder): Promise<RecallTurnDocument[]> {
  const using = withVectors === true ? embedder : withVectors || undefined;
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
    await store.add(record, { length, terms, vector: using ? await using.embed(recallText(record)) : undefined }, heldFence(record.conversationId));
    records.push(record);
  }
  return records;
}

beforeAll(async () => {
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
});

/** An in-memory index entry: its term counts, and a length in terms. */
function entry(turnNumber: number, terms: Record<string, number>, length = Object.values(terms).reduce((a, b) => a + b, 0)): RecallEntry {
  return { turnId: `t${turnNumber}`, turnNumber, at: new Date(0), length, terms: new Map(Object.entries(terms)) };
}

/** Okapi BM25 as published (Robertson and Zaragoza 2009), written out here apart from the product's code. */
function okapi(entries: RecallEntry[], e: RecallEntry, term: string, k1 = 1.2, b = 0.75): number {
  const n = entries.filter((x) => x.terms.has(term)).length;
  const avgdl = entries.reduce((sum, x) => sum + x.length, 0) / entries.length;
  const f = e.terms.get(term) ?? 0;
  const idf = Math.log((entries.length - n + 0.5) / (n + 0.5) + 1);
  return (idf * (f * (k1 + 1))) / (f + k1 * (1 - b + b * (e.length / avgdl)));
}

/** An embedder that embeds every text the same way and counts its calls; `fail` makes it throw. */
function fixedEmbedder(vector: number[], fail = false): Embedder & { calls: number } {
  return {
    modelId: "test-embedder",
    calls: 0,
    async embed() {
      this.calls++;
      if (fail) throw new Error("embedding refused");
      return new Float32Array(vector);
    },
  };
}

describe("bm25", () => {
  it("returns Okapi BM25 scores summed over the query's terms, for the entries that hold one", () => {
    const entries = [entry(1, { margin: 3, emea: 1 }, 10), entry(2, { margin: 1 }, 4), entry(3, { lisbon: 2 }, 30), entry(4, { emea: 2, margin: 1 }, 7)];
    const scores = bm25(entries, ["margin", "emea"]);
    expect(scores.has(entries[2])).toBe(false);
    for (const e of [entries[0], entries[1], entries[3]]) expect(scores.get(e)).toBeCloseTo(okapi(entries, e, "margin") + okapi(entries, e, "emea"), 12);
  });

  it("returns no score for an empty index or a query that matches nothing", () => {
    expect(bm25([], ["margin"]).size).toBe(0);
    expect(bm25([entry(1, { margin: 1 })], ["lisbon"]).size).toBe(0);
  });
});

describe("ConversationSearch", () => {
  describe("search (cost, issue 31)", () => {
    it("costs about what a plain query costs for a 500-character query of 82 quoted phrases over long turns", async () => {
      const conversationId = "c-phrases";
      const words = ["sales", "region", "margin", "quarter", "forecast", "pipeline", "churn", "invoice"];
      for (let i = 0; i < 60; i++) {
        const answer = Array.from({ length: 1_200 }, (_, j) => words[(i + j) % words.length]).join("  \n ");
        const record: RecallTurnDocument = {
          _id: `${conversationId}-t${i + 1}`,
          conversationId,
          turnNumber: i + 1,
          at: new Date(Date.UTC(2026, 9, 1, 9, i)),
          status: "completed",
          question: `question ${i} about sales`,
          answer,
          tools: [],
        };
        const terms = termFrequencies(recallText(record));
        await store.add(record, { length: [...terms.values()].reduce((a, b) => a + b, 0), terms }, heldFence(conversationId));
      }
      // Phrases no turn holds, so each is checked against every candidate: of letters the turns never use.
      const unused = "bdjkwxyz";
      const pairs = [...unused].flatMap((a) => [...unused].map((b) => a + b));
      const phrases = Array.from({ length: 82 }, (_, i) => `"${i < pairs.length ? pairs[i] : pairs[i - pairs.length] + unused[i % unused.length]}"`).join(" ");
      expect(`sales margin ${phrases}`.length).toBeLessThanOrEqual(500);
      const search = new ConversationSearch({ index: store });
      const timed = async (query: string) => {
        const started = performance.now();
        await search.search({ conversationId, query, limit: 5, visibleTurns: 0 });
        return performance.now() - started;
      };
      await timed("sales margin");
      const plain = Math.min(await timed("sales margin"), await timed("sales margin"));
      const quoted = Math.min(await timed(`sales margin ${phrases}`), await timed(`sales margin ${phrases}`));
      // One normalization per candidate, at most MAX_QUERY_PHRASES phrases: about a plain query's cost (it was 12 times it,
      // 2.4 s against 61 ms); the bound leaves room for a machine loaded by the rest of the suite.
      expect(quoted).toBeLessThan(plain * 5 + 500);
    });
  });

  describe("search", () => {
    it("returns the newer of two turns that score the same first", async () => {
      await addTurns("ties", ["The budget is fixed.", "The budget is set."], false);
      const outcome = await new ConversationSearch({ index: store }).search({ conversationId: "ties", query: "budget", limit: 2, visibleTurns: 0 });
      expect(outcome.hits.map((h) => h.record.turnNumber)).toEqual([2, 1]);
    });

    it("returns a turn repeated word for word once, naming the earlier turns it stands for, so the next different turn takes a place", async () => {
      await addTurns("repeats", ["Budget for Lisbon?", "The budget is fixed.", "The budget is fixed.", "The budget is fixed."], false);
      const outcome = await new ConversationSearch({ index: store }).search({ conversationId: "repeats", query: "budget", limit: 2, visibleTurns: 0 });
      expect(outcome.hits.map((h) => [h.record.turnNumber, h.repeats])).toEqual([
        [4, [3, 2]],
        [1, undefined],
      ]);
    });

    it("returns the turn whose question and answer name the subject before one whose tool output only lists it", async () => {
      const regions = "5 rows\nregion | revenue\nCentral | 5663480.13\nNorth | 5386848.41\nEast | 5350093.18\nSouth | 5097048.96\nWest | 4188885.13";
      const turns: RecallTurnDocument[] = [
        { question: "What was Central's revenue in May?", answer: "Central brought in 4,755,149.09 in May.", tools: [] },
        ...["September", "June"].map((month) => ({
          question: `How did the regions compare on revenue in ${month}?`,
          answer: `Central led ${month} with 5663480.13 in revenue; West was lowest.`,
          tools: recallToolOutputs([{ name: "sql_query", args: "{}", content: regions }]),
        })),
        ...DISTRACTORS.map((question) => ({ question, answer: "Noted.", tools: [] })),
      ].map((t, i) => ({
        _id: `fields-t${i + 1}`,
        conversationId: "fields",
        turnNumber: i + 1,
        at: new Date(Date.UTC(2026, 9, 1, 9, i)),
        status: "completed",
        ...t,
      }));
      for (const record of turns) await store.add(record, recallEntryTerms(record), heldFence("fields"));
      const outcome = await new ConversationSearch({ index: store }).search({
        conversationId: "fields",
        query: "Put the Central and North figures you quoted side by side",
        limit: 1,
        visibleTurns: 0,
      });
      // Before issue 46's second round every term counted alike, and the tables' "North" ranked both comparisons first.
      expect(outcome.hits.map((h) => h.record.turnNumber)).toEqual([1]);
    });

    it("returns lexical hits with no semantic score key and no unavailability flag without an embedder", async () => {
      await addTurns("plain", ["The budget is fixed.", ...DISTRACTORS], false);
      const logged: unknown[] = [];
      const logger = { warn: (...args: unknown[]) => logged.push(args) } as never;
      const outcome = await new ConversationSearch({ index: store, logger }).search({ conversationId: "plain", query: "budget", limit: 3, visibleTurns: 0 });
      expect(outcome.hits).toHaveLength(1);
      expect("semantic" in outcome.hits[0]).toBe(false);
      expect("semanticUnavailable" in outcome).toBe(false);
      expect(logged).toEqual([]);
    });

    it("returns semantic hits with a lexical score of 0 and skips turns indexed without a vector", async () => {
      await addTurns("mixed", ["The budget is fixed.", "Lunch was fine."], false);
      await addTurns("mixed-v", ["Lunch was fine."], true);
      const embedded = fixedEmbedder(Array.from((await store.entries("mixed-v"))[0].vector as Float32Array));
      const outcome = await new ConversationSearch({ index: store, embedder: embedded }).search({
        conversationId: "mixed",
        query: "budget",
        limit: 3,
        visibleTurns: 0,
      });
      expect(outcome.ranking).toBe("lexical and semantic");
      expect(outcome.hits.map((h) => [h.record.turnNumber, h.lexical > 0])).toEqual([[1, true]]);
      const vectors = await addTurns("vectors", ["Lunch was fine.", "The budget is fixed."], true);
      const semantic = await new ConversationSearch({ index: store, embedder: embedded }).search({
        conversationId: "vectors",
        query: "midday meal",
        limit: 3,
        visibleTurns: 0,
      });
      expect(semantic.hits[0]).toMatchObject({ record: { _id: vectors[0]._id }, lexical: 0 });
    });

    it("returns the best semantic match before a turn that shares only a common word with the query", async () => {
      // Vectors by hand, keyed by question: the paraphrase points the query's way, the turn that shares "month" away from it.
      const vectors: Record<string, number[]> = {
        "Which month do incentive payments arrive?": [1, 0],
        "Bonuses are paid out in March.": [0.9, 0.1],
        "The month report is late.": [0.2, 0.8],
        "Lunch was fine.": [0, 1],
      };
      const keyed: Embedder = { modelId: "keyed", embed: async (text) => new Float32Array(vectors[text.split("\n")[0]]) };
      await addTurns("common-word", ["Bonuses are paid out in March.", "The month report is late.", "Lunch was fine."], keyed);
      const outcome = await new ConversationSearch({ index: store, embedder: keyed }).search({
        conversationId: "common-word",
        query: "Which month do incentive payments arrive?",
        limit: 3,
        visibleTurns: 0,
      });
      expect(outcome.hits.map((h) => [h.record.turnNumber, h.lexical > 0])).toEqual([
        [1, false],
        [2, true],
        [3, false],
      ]);
    });

    it("logs the model and the error's name, not the query, when the query cannot be embedded", async () => {
      await addTurns("refused", ["The budget is fixed."], false);
      const logged: [string, Record<string, unknown>][] = [];
      const logger = { warn: (message: string, fields: Record<string, unknown>) => logged.push([message, fields]) } as never;
      const outcome = await new ConversationSearch({ index: store, embedder: fixedEmbedder([1, 0], true), logger }).search({
        conversationId: "refused",
        query: "budget",
        limit: 3,
        visibleTurns: 0,
      });
      expect(outcome).toMatchObject({ ranking: "lexical", semanticUnavailable: true });
      expect(logged).toEqual([["recall query embedding failed", { conversationId: "refused", modelId: "test-embedder", error: "Error" }]]);
    });

    it("reads only the first MAX_QUERY_TERMS terms of a query", async () => {
      await addTurns("long-query", ["The zebra budget is fixed.", ...DISTRACTORS], false);
      const filler = Array.from(
        { length: MAX_QUERY_TERMS },
        (_, i) => `filler${String.fromCharCode(97 + (i % 26))}${String.fromCharCode(97 + Math.floor(i / 26))}`,
      );
      const search = new ConversationSearch({ index: store });
      const past = await search.search({ conversationId: "long-query", query: [...filler, "zebra"].join(" "), limit: 3, visibleTurns: 0 });
      expect(past.hits).toEqual([]);
      const within = await search.search({ conversationId: "long-query", query: ["zebra", ...filler].join(" "), limit: 3, visibleTurns: 0 });
      expect(within.hits).toHaveLength(1);
    });

    it("returns at most `limit` hits with a quoted phrase, phrases matched across runs of spaces, any of several phrases", async () => {
      await addTurns("phrases", ["Use the EMEA   numbers.", "The gross margin fell.", "EMEA margin numbers, gross."], false);
      const search = new ConversationSearch({ index: store });
      const one = await search.search({ conversationId: "phrases", query: '"the EMEA numbers" margin', limit: 1, visibleTurns: 0 });
      expect(one.hits.map((h) => h.record.turnNumber)).toEqual([1]);
      const either = await search.search({ conversationId: "phrases", query: '"EMEA numbers" or "gross margin"', limit: 3, visibleTurns: 0 });
      expect(
        either.hits
          .map((h) => h.record.turnNumber)
          .slice(0, 2)
          .sort(),
      ).toEqual([1, 2]);
    });

    it("reads the records of `limit` turns only, unless a phrase asks for more candidates", async () => {
      await addTurns(
        "bounded",
        Array.from({ length: 12 }, (_, i) => `Budget line ${i} is fixed.`),
        false,
      );
      const asked: number[] = [];
      const counting = Object.create(store) as RecallIndexStore;
      counting.records = (conversationId, turnIds) => (asked.push(turnIds.length), store.records(conversationId, turnIds));
      const search = new ConversationSearch({ index: counting });
      await search.search({ conversationId: "bounded", query: "budget", limit: 2, visibleTurns: 0 });
      await search.search({ conversationId: "bounded", query: '"budget line"', limit: 1, visibleTurns: 0 });
      expect(asked).toEqual([2, 10]);
    });

    it("skips a ranked turn whose record is gone", async () => {
      const [gone] = await addTurns("gone", ["The budget is fixed.", "The budget is not fixed."], false);
      const missing = Object.create(store) as RecallIndexStore;
      missing.records = async (conversationId, turnIds) => (await store.records(conversationId, turnIds)).filter((r) => r._id !== gone._id);
      for (const query of ["budget", '"budget is"']) {
        const outcome = await new ConversationSearch({ index: missing }).search({ conversationId: "gone", query, limit: 3, visibleTurns: 0 });
        expect(outcome.hits.map((h) => h.record.turnNumber)).toEqual([2]);
      }
    });

    it("returns the turn that shares the query's word stems first, lexically", async () => {
      await addTurns("lexical", ["We decided to exclude returns from the revenue figures.", ...DISTRACTORS], false);
      const outcome = await new ConversationSearch({ index: store }).search({
        conversationId: "lexical",
        query: "excluding returned orders",
        limit: 3,
        visibleTurns: 0,
      });
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
      const outcome = await new ConversationSearch({ index: store, embedder }).search({
        conversationId: "throttled",
        query: "returns",
        limit: 3,
        visibleTurns: 0,
      });
      expect(outcome).toMatchObject({ ranking: "lexical", semanticUnavailable: true });
      expect(outcome.hits.map((h) => h.record.turnNumber)).toEqual([1]);
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
      await addTurns(
        "phrase",
        ["Numbers for EMEA came late again.", "Please use the EMEA numbers.", "Use numbers, not words, for EMEA: use numbers for EMEA."],
        false,
      );
      const search = new ConversationSearch({ index: store });
      const words = await search.search({ conversationId: "phrase", query: "use the EMEA numbers", limit: 3, visibleTurns: 0 });
      expect(words.hits[0].record.turnNumber).toBe(3);
      const phrase = await search.search({ conversationId: "phrase", query: '"use the EMEA numbers"', limit: 3, visibleTurns: 0 });
      expect(phrase.hits.map((h) => h.record.turnNumber)).toEqual([2, 3, 1]);
    });

    it("returns only the caller's conversation's turns, whatever the other conversations say", async () => {
      await addTurns("mine", ["Lunch was fine.", ...DISTRACTORS], true);
      await addTurns("theirs", ["The launch code for the demo is tangerine."], true);
      const outcome = await new ConversationSearch({ index: store, embedder }).search({
        conversationId: "mine",
        query: "launch code tangerine",
        limit: 5,
        visibleTurns: 0,
      });
      expect(outcome.hits.length).toBe(5);
      expect(outcome.hits.every((h) => h.record.conversationId === "mine")).toBe(true);
      expect(await store.records("mine", ["theirs-t1"])).toEqual([]);
    });
  });
});
