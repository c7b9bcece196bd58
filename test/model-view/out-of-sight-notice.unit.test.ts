import { describe, expect, it } from "vitest";
import {
  buildModelView,
  countMessagesTokens,
  EMPTY_OUT_OF_SIGHT_SUMMARY,
  namesIn,
  OUT_OF_SIGHT_NAMES,
  outOfSightNotice,
  summaryAfterTurn,
  summaryAfterTurns,
} from "../../lib/model-view/index.js";
import { answer, policy, user } from "./histories.js";
import { AIMessage } from "@langchain/core/messages";

const toolCall = (name: string, id: string) => new AIMessage({ content: "", tool_calls: [{ id, name, args: {}, type: "tool_call" }] });

const recall = { toolName: "search_conversation" };

/** A thread of `finished` question/answer turns and a new question. */
function thread(finished: number) {
  return [...Array.from({ length: finished }, (_, i) => [user(`q${i + 1}`), answer(`a${i + 1}`)]).flat(), user("next")];
}

describe("outOfSightNotice", () => {
  it("returns nothing when no turn is out of sight", () => {
    expect(outOfSightNotice(0, recall)).toBeUndefined();
  });

  it("returns the exact count by default, and the tool that searches them", () => {
    expect(outOfSightNotice(1, recall)).toBe(
      "The first turn of this conversation is not shown to you. " +
        "When the user refers to something said before that you cannot see, call search_conversation to search those turns.",
    );
    // Before issue 46 this said "At least 1 earlier turn" for 6 hidden.
    expect(outOfSightNotice(6, recall)).toContain("The first 6 turns of this conversation are not shown to you.");
  });

  it("returns a count rounded down to a step of turns when the policy sets one", () => {
    const stepped = { ...recall, stepTurns: 10 };
    expect(outOfSightNotice(9, stepped)).toContain("At least 1 earlier turn of this conversation is not shown to you.");
    expect(outOfSightNotice(19, stepped)).toContain("At least 10 earlier turns of this conversation are not shown to you.");
  });

  it("returns what the hidden turns were about and the tools that ran in them, most frequent first", () => {
    const turns = [
      [user("How did the West region do on revenue in July?"), answer("Fine.")],
      [user("Which West customers bought networking gear?"), answer("Some.")],
      [user("What is the discount approval policy?"), answer("Tiers.")],
    ];
    const summary = summaryAfterTurns(
      EMPTY_OUT_OF_SIGHT_SUMMARY,
      turns.map((messages) => ({ messages })),
    );
    const withTools = summaryAfterTurn(summary, [user("Check it."), toolCall("sql_query", "c1"), toolCall("sql_query", "c2")]);
    const notice = outOfSightNotice(4, recall, withTools) as string;
    // "West" is a name of those turns, given once, not again as a topic word.
    expect(notice).toMatch(/^The first 4 turns of this conversation are not shown to you \(they were about approval, .*; named West \(turn 2\); /);
    expect(notice).toContain("tools that ran: sql_query ×2");
    expect(notice).toContain("approval");
  });
});

describe("namesIn", () => {
  it("returns the runs of capitalized words a question uses, once each, without possessives, months or a sentence's capitalized first word", () => {
    expect(namesIn("How much did Orchard Analytics Associates spend with us in West in July 2026?")).toEqual(["Orchard Analytics Associates", "West"]);
    expect(namesIn("What was Central's revenue in May? And Central's margin?")).toEqual(["Central"]);
    expect(namesIn("Which customers count as Enterprise? Thanks.")).toEqual(["Enterprise"]);
    expect(namesIn("Can you draft a note about Friday's review?")).toEqual([]);
  });
});

describe("summaryAfterTurn", () => {
  it("returns the names of the hidden questions, the most recent first, at most OUT_OF_SIGHT_NAMES, which the notice gives", () => {
    const names = ["Acme Corp", "Birch Dental", "Cobalt Ridge", "Delta Freight", "Echo Labs", "Falcon Realty", "Granite Motors"];
    const summary = summaryAfterTurns(
      EMPTY_OUT_OF_SIGHT_SUMMARY,
      [...names, "Acme Corp"].map((name) => ({ messages: [user(`How much did ${name} spend?`), answer("Some.")] })),
    );
    expect(summary.names).toEqual(["Acme Corp", "Granite Motors", "Falcon Realty", "Echo Labs", "Delta Freight", "Cobalt Ridge"]);
    expect(summary.names).toHaveLength(OUT_OF_SIGHT_NAMES);
    // Before, a name asked about once, far back, was only a word among the most frequent ones: "orchard" lost to "orders" and "revenue".
    expect(outOfSightNotice(8, recall, summary)).toContain(
      "(they were about spend, birch, dental; named Acme Corp (turn 8), Granite Motors (turn 7), Falcon Realty (turn 6), " +
        "Echo Labs (turn 5), Delta Freight (turn 4), Cobalt Ridge (turn 3))",
    );
  });

  it("returns each name with the turn it was last used in, a handle search_conversation reads with turn", () => {
    const questions = ["How did West do?", "What did Falcon Partners Ltd spend in April?", "And the orders?", "What about West again?"];
    const summary = summaryAfterTurns(
      EMPTY_OUT_OF_SIGHT_SUMMARY,
      questions.map((q) => ({ messages: [user(q), answer("Some.")] })),
    );
    expect(summary.folded).toBe(4);
    expect(summary.nameTurns).toEqual([4, 2]);
    // Before, the notice named "Falcon Partners Ltd" without a turn: only a search could reach it.
    expect(outOfSightNotice(4, recall, summary)).toContain("named West (turn 4), Falcon Partners Ltd (turn 2)). ");
    expect(outOfSightNotice(4, recall, summary)).toMatch(/call search_conversation to search those turns, or read one by its number \(turn\)\.$/);
  });

  it("returns names without turns for a summary folded before turns were counted: its numbers are unknown", () => {
    const old = { tools: {}, words: { revenue: 2 }, names: ["Acme Corp"] };
    const summary = summaryAfterTurn(old, [user("What did Harbor Partners Inc spend?"), answer("Some.")]);
    expect(summary.nameTurns).toBeUndefined();
    expect(outOfSightNotice(3, recall, summary)).toContain("named Harbor Partners Inc, Acme Corp). ");
    expect(outOfSightNotice(3, recall, summary)).not.toContain("(turn)");
  });

  it("returns a summary folded before names were kept with the new turn's names", () => {
    const old = { tools: {}, words: { revenue: 2 } };
    expect(summaryAfterTurn(old, [user("What did Harbor Partners Inc spend?"), answer("Some.")]).names).toEqual(["Harbor Partners Inc"]);
  });
});

describe("buildModelView", () => {
  describe("with an out-of-sight policy", () => {
    it("returns the system prompt alone while every finished turn is in view", () => {
      const view = buildModelView(thread(6), policy({ systemPrompt: "Be brief.", finishedTurns: 6, outOfSight: recall }));
      expect(view.messages[0].content).toBe("Be brief.");
    });

    it("returns the notice after the system prompt once turns are out of sight, its tokens counted", () => {
      const view = buildModelView(thread(8), policy({ systemPrompt: "Be brief.", finishedTurns: 6, outOfSight: recall }));
      expect(view.messages[0].content).toBe(`Be brief.\n\n${outOfSightNotice(2, recall)}`);
      expect(view.stats.viewTokens).toBe(countMessagesTokens(view.messages));
    });

    it("returns the notice as the whole system part when the prompt is blank", () => {
      const view = buildModelView(thread(3), policy({ systemPrompt: " ", finishedTurns: 1, outOfSight: recall }));
      expect(view.messages[0].content).toBe(outOfSightNotice(2, recall));
    });

    it("returns the names of archived turns with the turns they came from, the same as if those turns were in the thread", () => {
      const customers = [
        "Acme Corp",
        "Birch Dental",
        "Cobalt Ridge",
        "Delta Freight",
        "Echo Labs",
        "Falcon Realty",
        "Granite Motors",
        "Harbor Inc",
        "Ionic Labs",
        "Juniper Co",
      ];
      const named = (i: number) => [user(`What did ${customers[i]} spend?`), answer(`a${i + 1}`)];
      const turns = Array.from({ length: 10 }, (_, i) => named(i));
      const whole = buildModelView([...turns.flat(), user("next")], policy({ finishedTurns: 6, historyBlockTurns: 1, outOfSight: recall }));
      const archivedSummary = summaryAfterTurns(
        EMPTY_OUT_OF_SIGHT_SUMMARY,
        turns.slice(0, 2).map((messages) => ({ messages })),
      );
      const archived = buildModelView([...turns.slice(2).flat(), user("next")], policy({ finishedTurns: 6, historyBlockTurns: 1, outOfSight: recall }), {
        archivedTurns: 2,
        outOfSight: archivedSummary,
      });
      expect(whole.messages[0].content).toContain("named Delta Freight (turn 4), Cobalt Ridge (turn 3), Birch Dental (turn 2), Acme Corp (turn 1))");
      expect(archived.messages[0].content).toBe(whole.messages[0].content);
    });

    it("returns the names without turns when the archived turns' summary did not count them all: it would number them wrong", () => {
      const customers = [
        "Acme Corp",
        "Birch Dental",
        "Cobalt Ridge",
        "Delta Freight",
        "Echo Labs",
        "Falcon Realty",
        "Granite Motors",
        "Harbor Inc",
        "Ionic Labs",
        "Juniper Co",
      ];
      const named = (i: number) => [user(`What did ${customers[i]} spend?`), answer(`a${i + 1}`)];
      const turns = Array.from({ length: 10 }, (_, i) => named(i));
      // A thread archived before it kept a summary: 2 turns archived, the summary empty.
      const view = buildModelView([...turns.slice(2).flat(), user("next")], policy({ finishedTurns: 6, historyBlockTurns: 1, outOfSight: recall }), {
        archivedTurns: 2,
        outOfSight: EMPTY_OUT_OF_SIGHT_SUMMARY,
      });
      expect(view.messages[0].content).toContain("named Delta Freight, Cobalt Ridge).");
      expect(view.messages[0].content).not.toContain("(turn");
    });

    it("returns a system part that changes only when the window's first turn moves, so a prompt cache keeps it", () => {
      const systems = Array.from(
        { length: 40 },
        (_, i) => buildModelView(thread(i), policy({ finishedTurns: 6, historyBlockTurns: 6, outOfSight: recall })).messages[0].content,
      );
      const changes = systems.filter((text, i) => i > 0 && text !== systems[i - 1]).length;
      // The window's first turn moves 6 at a time: 6 hidden at 12 finished turns, then 12, 18, 24 and 30.
      expect(changes).toBe(5);
    });
  });
});
