import { describe, expect, it } from "vitest";
import { ConversationSearch, isUserStatement } from "../../lib/recall/conversation-search.js";
import { termFrequencies } from "../../lib/recall/recall-terms.js";
import { recallText } from "../../lib/recall/turn-indexer.js";
import { RecallIndexStore, type RecallTurnDocument } from "../../lib/store/recall-index-store.js";
import { heldFence } from "../support/fences.js";
import { useStoreFixture } from "../support/store-fixture.js";

const { stores } = useStoreFixture("recall_first_person", (db) => ({ store: new RecallIndexStore(db) }));

async function addTurns(conversationId: string, questions: readonly string[]): Promise<void> {
  for (const [i, question] of questions.entries()) {
    const record: RecallTurnDocument = {
      _id: `${conversationId}-t${i + 1}`,
      conversationId,
      turnNumber: i + 1,
      at: new Date(Date.UTC(2026, 9, 1, 9, i)),
      status: "completed",
      question,
      answer: i === 0 ? "Noted, I'll keep that in mind." : "The regions compared as follows: West led, East was lowest.",
      tools: [],
    };
    const terms = termFrequencies(recallText(record));
    await stores.store.add(record, { length: [...terms.values()].reduce((a, b) => a + b, 0), terms }, heldFence(conversationId));
  }
}

const QUESTIONS = [
  "Before we start: I look after the West region.",
  ...Array.from({ length: 12 }, (_, i) => `How did the regions compare on revenue in month ${i + 1}?`),
];

describe("ConversationSearch", () => {
  describe("search", () => {
    it("returns the user's own statement first for a question in the first person", async () => {
      await addTurns("c-first", QUESTIONS);
      const outcome = await new ConversationSearch({ index: stores.store }).search({
        conversationId: "c-first",
        query: "How is my region doing this month compared with last month?",
        limit: 3,
        visibleTurns: 0,
      });
      expect(outcome.hits[0].record.turnNumber).toBe(1);
    });

    it("returns the same order as before for a question not in the first person", async () => {
      await addTurns("c-third", QUESTIONS);
      const outcome = await new ConversationSearch({ index: stores.store }).search({
        conversationId: "c-third",
        query: "How is the region doing this month compared with last month?",
        limit: 3,
        visibleTurns: 0,
      });
      expect(outcome.hits.map((h) => h.record.turnNumber)).not.toContain(1);
    });
  });
});

describe("isUserStatement", () => {
  it("returns true for a first-person statement and false for a question or a third-person one", () => {
    expect(isUserStatement("My manager is Lena Novak.")).toBe(true);
    expect(isUserStatement("What is my manager's name?")).toBe(false);
    expect(isUserStatement("The West region leads.")).toBe(false);
  });
});
