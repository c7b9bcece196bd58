import { describe, expect, it } from "vitest";
import { buildModelView, countMessagesTokens, outOfSightNotice } from "../../lib/model-view/index.js";
import { answer, policy, user } from "./histories.js";

const recall = { toolName: "search_conversation" };

/** A thread of `finished` question/answer turns and a new question. */
function thread(finished: number) {
  return [...Array.from({ length: finished }, (_, i) => [user(`q${i + 1}`), answer(`a${i + 1}`)]).flat(), user("next")];
}

describe("outOfSightNotice", () => {
  it("returns nothing when no turn is out of sight", () => {
    expect(outOfSightNotice(0, recall)).toBeUndefined();
  });

  it("returns a count rounded down to a step of ten turns, and the tool that searches them", () => {
    expect(outOfSightNotice(1, recall)).toBe(
      "At least 1 earlier turn of this conversation is not shown to you. " +
        "When the user refers to something said before that you cannot see, call search_conversation to search those turns.",
    );
    expect(outOfSightNotice(9, recall)).toBe(outOfSightNotice(1, recall));
    expect(outOfSightNotice(19, recall)).toContain("At least 10 earlier turns of this conversation are not shown to you.");
    expect(outOfSightNotice(20, recall)).toContain("At least 20 earlier turns");
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

    it("returns a system part that changes only when the count crosses a step, so a prompt cache keeps it", () => {
      const systems = Array.from({ length: 40 }, (_, i) => buildModelView(thread(i), policy({ finishedTurns: 6, outOfSight: recall })).messages[0].content);
      const changes = systems.filter((text, i) => i > 0 && text !== systems[i - 1]).length;
      // Hidden turns run 0..33: the text changes at 1, 10, 20 and 30 hidden.
      expect(changes).toBe(4);
    });
  });
});
