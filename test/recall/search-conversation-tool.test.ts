import { describe, expect, it } from "vitest";
import { apiPrincipal } from "../../lib/auth/principal.js";
import { countTextTokens } from "../../lib/model-view/token-counter.js";
import { ConversationSearch, type SearchOutcome } from "../../lib/recall/conversation-search.js";
import { recallTerms, termFrequencies } from "../../lib/recall/recall-terms.js";
import { createSearchConversationTool, formatSearchOutcome, matchingLines, SEARCH_CONVERSATION_NAME } from "../../lib/recall/search-conversation-tool.js";
import { recallText, recallToolOutputs } from "../../lib/recall/turn-indexer.js";
import { RecallIndexStore, type RecallTurnDocument } from "../../lib/store/recall-index-store.js";
import type { ToolContext } from "../../lib/tools/tool.js";
import { heldFence } from "../support/fences.js";
import { useStoreFixture } from "../support/store-fixture.js";

const { stores } = useStoreFixture("search_tool", (db) => ({ index: new RecallIndexStore(db) }));

function record(turnNumber: number, question: string, fields: Partial<RecallTurnDocument> = {}): RecallTurnDocument {
  return {
    _id: `t${turnNumber}`,
    conversationId: "c",
    turnNumber,
    at: new Date(Date.UTC(2026, 9, 1, 9, turnNumber)),
    status: "completed",
    question,
    answer: "Noted.",
    tools: [],
    ...fields,
  };
}

const outcome = (hits: RecallTurnDocument[], fields: Partial<SearchOutcome> = {}): SearchOutcome => ({
  hits: hits.map((r) => ({ record: r, lexical: 1 })),
  searchedTurns: 6,
  indexedTurns: 8,
  ranking: "lexical",
  ...fields,
});

async function index(records: RecallTurnDocument[]): Promise<void> {
  for (const r of records) {
    const terms = termFrequencies(recallText(r));
    const length = [...terms.values()].reduce((a, b) => a + b, 0);
    await stores.index.add(r, { length, terms }, heldFence(r.conversationId));
  }
}

const ctx = (conversationId: string): ToolContext => ({
  conversationId,
  turnId: "now",
  toolCallId: "call",
  caller: { principal: apiPrincipal("ada"), roles: [] },
  mayUse: () => true,
});

describe("formatSearchOutcome", () => {
  it("returns each match with its turn number, time, question, answer and tool outputs, best first", () => {
    const tools = [{ name: "sql_query", args: '{"sql":"SELECT 1"}', preview: "1 row" }];
    const text = formatSearchOutcome("budget", outcome([record(3, "What was the budget?", { tools }), record(1, "Budget owner?")]), 1_500);
    expect(text).toBe(
      [
        '2 earlier turns for "budget", best match first (searched 6 turns out of view, ranked lexical).',
        '[Turn 3, 2026-10-01 09:03 UTC]\nUser: What was the budget?\nAssistant: Noted.\nTool sql_query {"sql":"SELECT 1"} returned: 1 row',
        "[Turn 1, 2026-10-01 09:01 UTC]\nUser: Budget owner?\nAssistant: Noted.",
      ].join("\n\n"),
    );
  });

  it("returns a failed turn as having no answer, and one match in the singular", () => {
    const text = formatSearchOutcome("x", outcome([record(2, "x?", { status: "failed", answer: "" })]), 1_500);
    expect(text).toMatch(/^1 earlier turn for "x"/);
    expect(text).toContain("Assistant: [no answer: this turn failed]");
  });

  it("returns every match within the token ceiling, each cut to its share", () => {
    const long = "The forecast assumptions were discussed at length. ".repeat(400);
    const text = formatSearchOutcome("forecast", outcome([record(1, long), record(2, long), record(3, long)]), 1_500);
    expect(countTextTokens(text)).toBeLessThanOrEqual(1_500);
    expect(countTextTokens(text)).toBeGreaterThan(1_300);
    for (const n of [1, 2, 3]) expect(text).toContain(`[Turn ${n}, 2026-10-01 09:0${n} UTC]`);
  });

  it("returns a sentence saying there is nothing to search while every turn is in view, or before any turn finished", () => {
    expect(formatSearchOutcome("x", outcome([], { searchedTurns: 0, indexedTurns: 4 }), 1_500)).toBe(
      "Nothing to search: all 4 earlier turns are already in view.",
    );
    expect(formatSearchOutcome("x", outcome([], { searchedTurns: 0, indexedTurns: 0 }), 1_500)).toBe(
      "Nothing to search: this conversation has no earlier finished turns.",
    );
  });

  it("returns no match with what was searched, and says when semantic search was unavailable", () => {
    expect(formatSearchOutcome("x", outcome([], { semanticUnavailable: true }), 1_500)).toBe(
      'No earlier turn matches "x" (searched 6 turns out of view, ranked lexical). Semantic search was unavailable, ' +
        "so this was ranked lexically only. Try other words, or say that you do not know.",
    );
  });
});

describe("createSearchConversationTool", () => {
  it("returns the best matches of the caller's conversation only, three by default, saying which turns are out of the view's window", async () => {
    const questions = ["warehouse lease renewal?", "lease for the Lisbon warehouse?", "warehouse lease costs?", "warehouse lease owner?", "lunch?"];
    await index(questions.map((q, i) => record(i + 1, q)));
    await index([record(1, "warehouse lease elsewhere", { _id: "other-1", conversationId: "other" })]);
    const tool = createSearchConversationTool({ search: new ConversationSearch({ index: stores.index }), view: { finishedTurns: 1, historyBlockTurns: 1 } });
    expect(tool.name).toBe(SEARCH_CONVERSATION_NAME);
    const text = await tool.run(tool.schema.parse({ query: "  warehouse lease " }), ctx("c"));
    expect(text).toMatch(
      /^3 earlier turns for "warehouse lease", best match first \(searched all 5 earlier turns, 4 of them out of view and the last 1 shown to you only in part/,
    );
    expect(text).not.toContain("elsewhere");
  });

  it("returns a turn the view keeps, marked as shown in part, instead of refusing: the view shows only its digest", async () => {
    const rows = Array.from({ length: 40 }, (_, i) => `Customer ${i + 1} | ${1_000 + i}.50`).join("\n");
    const tools = [{ name: "sql_query", args: '{"sql":"SELECT customer, revenue FROM sales"}', content: `40 rows\n${rows}` }];
    await index([record(1, "Revenue by customer?", { tools: recallToolOutputs(tools) }), record(2, "lunch?")]);
    // Both turns are in the window of a 6-turn view: before issue 46 the search answered "Nothing to search".
    const tool = createSearchConversationTool({ search: new ConversationSearch({ index: stores.index }), view: { finishedTurns: 6, historyBlockTurns: 6 } });
    const text = await tool.run(tool.schema.parse({ query: "Customer 37" }), ctx("c"));
    expect(text).toContain("[Turn 1, 2026-10-01 09:01 UTC, in view in part]");
    expect(text).toContain("searched all 2 earlier turns, 0 of them out of view");
    // Row 37 is past the output's first 400 characters: the index keeps the rest in chunks, and the hit shows the one with the query's terms.
    expect(`40 rows\n${rows}`.indexOf("Customer 37 |")).toBeGreaterThan(400);
    expect(text).toContain("Customer 37 | 1036.50");
  });

  it("returns the row a question names from deep in a long output, not a part whose rows share its words one by one", () => {
    const name = (i: number) =>
      i === 10 ? "Oakmont Foods Co" : i === 12 ? "Summit Insurance Ltd" : i === 52 ? "Oakmont Insurance Co" : `Birch Dental LLC ${i}`;
    const rows = Array.from({ length: 60 }, (_, i) => `${name(i)} | Mid-Market | ${10_000 + i}.25 | 4`);
    const tools = recallToolOutputs([{ name: "sql_query", args: "{}", content: `60 rows\ncustomer | segment | revenue | orders\n${rows.join("\n")}` }]);
    const text = formatSearchOutcome(
      "What revenue did Oakmont Insurance Co have in that list?",
      outcome([record(2, "List every Central customer for May 2026, with revenue.", { tools })]),
      1_500,
    );
    // Before, the hit showed the part with the most distinct query terms, the first of equals: rows 10 and 12's
    // part ("Oakmont", "Co", "Insurance") came before row 52's.
    expect(text).toContain("Oakmont Insurance Co | Mid-Market | 10052.25 | 4");
    expect(text).not.toContain("Birch Dental LLC 30 |");
  });

  it("returns the passage under a heading that matched, the lines after it in its paragraph", () => {
    const passages = Array.from(
      { length: 5 },
      (_, i) => `[${i + 1}] source: doc-${i + 1}.md | Handbook › Section ${i + 1}\nBody line one of passage ${i + 1}.\nBody line two.`,
    );
    const content = `5 passages\n\n${passages.join("\n\n")}`.replace("Section 5", "Approval tiers");
    const lines = matchingLines(content, 60, new Set(recallTerms("What did the passage under Approval tiers say?")));
    expect(lines).toEqual(["[5] source: doc-5.md | Handbook › Approval tiers", "Body line one of passage 5.", "Body line two."]);
  });

  it("returns as many matches as the model asks, up to five", async () => {
    await index(["budget one?", "budget two?", "budget three?"].map((q, i) => record(i + 1, q)));
    const tool = createSearchConversationTool({ search: new ConversationSearch({ index: stores.index }), view: { finishedTurns: 0, historyBlockTurns: 1 } });
    expect(await tool.run(tool.schema.parse({ query: "budget", maxResults: 1 }), ctx("c"))).toMatch(/^1 earlier turn for "budget"/);
    expect(tool.schema.safeParse({ query: "budget", maxResults: 6 }).success).toBe(false);
    expect(tool.schema.safeParse({ query: "   " }).success).toBe(false);
  });
});
