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
    expect(notice).toMatch(/^The first 4 turns of this conversation are not shown to you \(they were about approval, .*; named West; /);
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
      "(they were about spend, birch, dental; named Acme Corp, Granite Motors, Falcon Realty, Echo Labs, Delta Freight, Cobalt Ridge)",
    );
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
