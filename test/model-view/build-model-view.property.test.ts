import type { BaseMessage, ToolMessage } from "@langchain/core/messages";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ContextBudgetExceededError } from "../../lib/errors.js";
import {
  buildModelView,
  countMessagesTokens,
  EMPTY_USER_MESSAGE,
  INTERRUPTED_TOOL_RESULT,
  NO_ANSWER_STUB,
  validateConverseView,
  type ModelView,
  type ModelViewPolicy,
} from "../../lib/model-view/index.js";
import { historyOf, historySpec, policySpec } from "./history-arbitrary.js";
import { fingerprint, toolCallIds } from "./histories.js";

const RUNS = 1_500;

/** The view, or undefined when the budget cannot be met (the only failure allowed). */
function viewOrBudgetError(messages: BaseMessage[], policy: ModelViewPolicy): ModelView | undefined {
  try {
    return buildModelView(messages, policy);
  } catch (error) {
    if (error instanceof ContextBudgetExceededError) return undefined;
    throw error;
  }
}

const case_ = fc.record({ spec: historySpec, policy: policySpec }).map(({ spec, policy }) => ({ messages: historyOf(spec), policy }));

/** The text a message shows: its string, or its non-blank text blocks joined by newlines. */
function textOf(message: BaseMessage): string {
  const { content } = message;
  if (typeof content === "string") return content;
  return content
    .map((block) => (block.type === "text" && typeof block.text === "string" ? block.text : ""))
    .filter((text) => text.trim() !== "")
    .join("\n");
}

/** Index in the view of the active turn's user message: the last user message. */
function activeStart(view: BaseMessage[]): number {
  return view.findLastIndex((m) => m.type === "human");
}

describe("model view", () => {
  describe("buildModelView (properties)", () => {
    it("returns a view that passes the Converse validator, or throws only ContextBudgetExceededError", () => {
      fc.assert(
        fc.property(case_, ({ messages, policy }) => {
          const view = viewOrBudgetError(messages, policy);
          if (view) validateConverseView(view.messages);
        }),
        { numRuns: RUNS },
      );
    });

    it("returns a view within the budget, tool schemas included, with exact token stats", () => {
      fc.assert(
        fc.property(case_, ({ messages, policy }) => {
          const view = viewOrBudgetError(messages, policy);
          if (!view) return;
          expect(view.stats.viewTokens).toBe(countMessagesTokens(view.messages));
          expect(view.stats.viewTokens + view.stats.toolSchemaTokens).toBeLessThanOrEqual(policy.totalBudget);
          expect(view.stats.stateTokens).toBe(countMessagesTokens(messages));
        }),
        { numRuns: RUNS },
      );
    });

    it("throws ContextBudgetExceededError only when the smallest view is over the budget", () => {
      fc.assert(
        fc.property(case_, ({ messages, policy }) => {
          try {
            buildModelView(messages, policy);
          } catch (error) {
            if (!(error instanceof ContextBudgetExceededError)) throw error;
            expect(error.tokens).toBeGreaterThan(policy.totalBudget);
            // Not a budget-only failure: a larger budget builds the view.
            expect(() => buildModelView(messages, { ...policy, totalBudget: error.tokens })).not.toThrow();
          }
        }),
        { numRuns: RUNS },
      );
    });

    it("does not change its input", () => {
      fc.assert(
        fc.property(case_, ({ messages, policy }) => {
          const before = fingerprint(messages);
          const copy = [...messages];
          viewOrBudgetError(messages, policy);
          expect(fingerprint(messages)).toBe(before);
          expect(messages.every((m, i) => m === copy[i]) && messages.length === copy.length).toBe(true);
        }),
        { numRuns: RUNS },
      );
    });

    it("returns every tool call immediately followed by its results, each from the stored call or a marked stand-in", () => {
      fc.assert(
        fc.property(case_, ({ messages, policy }) => {
          const view = viewOrBudgetError(messages, policy);
          if (!view) return;
          const storedResults = new Set(messages.filter((m) => m.type === "tool").map((m) => (m as ToolMessage).tool_call_id));
          const v = view.messages;
          for (let i = 0; i < v.length; i++) {
            // A result follows its call or another result of the same call group.
            if (v[i].type === "tool") expect(v[i - 1].type === "tool" || toolCallIds(v[i - 1]).length > 0).toBe(true);
            const ids = toolCallIds(v[i]);
            if (ids.length === 0) continue;
            const answered = v.slice(i + 1, i + 1 + ids.length) as ToolMessage[];
            expect(answered.map((m) => m.type)).toEqual(ids.map(() => "tool"));
            expect(new Set(answered.map((m) => m.tool_call_id))).toEqual(new Set(ids));
            for (const r of answered) expect(storedResults.has(r.tool_call_id) || r.content === INTERRUPTED_TOOL_RESULT).toBe(true);
            expect(v[i + 1 + ids.length]?.type ?? "end").not.toBe("tool");
          }
        }),
        { numRuns: RUNS },
      );
    });

    it("returns finished turns only as (question, final answer) pairs of the latest finished turns", () => {
      fc.assert(
        fc.property(case_, ({ messages, policy }) => {
          const view = viewOrBudgetError(messages, policy);
          if (!view) return;
          const v = view.messages.filter((m) => m.type !== "system");
          const pairs = v.slice(0, activeStart(v));
          expect(pairs.length).toBe(2 * view.stats.finishedTurnsKept);
          expect(view.stats.finishedTurnsKept).toBeLessThanOrEqual(policy.finishedTurns);
          const humans = messages.map((m, i) => (m.type === "human" ? i : -1)).filter((i) => i >= 0);
          const finishedStarts = humans.slice(0, -1).slice(-view.stats.finishedTurnsKept || humans.length);
          const expectedQuestions = view.stats.finishedTurnsKept === 0 ? [] : finishedStarts.map((i) => textOf(messages[i]));
          for (let p = 0; p < pairs.length; p += 2) {
            const [question, answer] = [pairs[p], pairs[p + 1]];
            expect(question.type).toBe("human");
            expect(answer.type).toBe("ai");
            expect(toolCallIds(answer)).toEqual([]);
            const stored = expectedQuestions[p / 2];
            expect(textOf(question)).toBe(stored.trim() ? stored : EMPTY_USER_MESSAGE);
            const answers = messages.filter((m) => m.type === "ai" && toolCallIds(m).length === 0).map(textOf);
            expect(answers.includes(textOf(answer)) || textOf(answer) === NO_ANSWER_STUB).toBe(true);
          }
        }),
        { numRuns: RUNS },
      );
    });

    it("returns the latest user message, as the start of the active turn", () => {
      fc.assert(
        fc.property(case_, ({ messages, policy }) => {
          const view = viewOrBudgetError(messages, policy);
          if (!view) return;
          const latest = messages.findLast((m) => m.type === "human") as BaseMessage;
          const shown = view.messages[activeStart(view.messages)];
          expect(shown === latest || (textOf(latest).trim() === "" && shown.content === EMPTY_USER_MESSAGE)).toBe(true);
        }),
        { numRuns: RUNS },
      );
    });
  });
});
