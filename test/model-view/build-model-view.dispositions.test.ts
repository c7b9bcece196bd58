import { HumanMessage, SystemMessage } from "@langchain/core/messages";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  buildModelView,
  EMPTY_TOOL_OUTPUT,
  INTERRUPTED_TOOL_RESULT,
  NO_ANSWER_STUB,
  type MessageDisposition,
  type ModelView,
} from "../../lib/model-view/index.js";
import { historyOf, historySpec, policySpec } from "./history-arbitrary.js";
import { answer, calls, offloaded, policy, result, rows, user, viewOrBudgetError } from "./histories.js";
import { propertyRuns } from "../support/property-runs.js";

const RUNS = propertyRuns(500);

const case_ = fc
  .record({
    spec: historySpec,
    policy: policySpec,
    outOfSight: fc.option(fc.record({ toolName: fc.constant("search_conversation"), stepTurns: fc.constantFrom(1, 3) })),
  })
  .map(({ spec, policy, outOfSight }) => ({ messages: historyOf(spec), policy: outOfSight ? { ...policy, outOfSight } : policy }));

function withView(d: MessageDisposition): d is MessageDisposition & { viewIndex: number } {
  return "viewIndex" in d;
}

/** The disposition of each message, as `fate` or `fate:reason`, without the turn. */
function fates(view: ModelView): string[] {
  return view.dispositions.map((d) => {
    if (d.fate === "left-out") return `left-out:${d.reason}`;
    if (d.fate === "repaired") return `repaired:${d.repair}@${d.viewIndex}`;
    if (d.fate === "condensed") return `${d.part}@${d.viewIndex}`;
    if (d.fate === "notice") return d.notice === "tool-output" ? `notice:${d.reason}${d.handle ? `:${d.handle}` : ""}@${d.viewIndex}` : "out-of-sight";
    return `sent@${d.viewIndex}`;
  });
}

describe("model view", () => {
  describe("buildModelView (dispositions)", () => {
    it("returns exactly one disposition for every stored message, with the turn it belongs to", () => {
      fc.assert(
        fc.property(case_, ({ messages, policy }) => {
          const view = viewOrBudgetError(messages, policy);
          if (!view) return;
          expect(view.dispositions).toHaveLength(messages.length);
          let turn = -1;
          messages.forEach((message, i) => {
            if (message.type === "human") turn++;
            expect(i in view.dispositions).toBe(true);
            expect(view.dispositions[i].turn).toBe(turn < 0 ? undefined : turn);
          });
        }),
        { numRuns: RUNS },
      );
    });

    it("returns as sent exactly the stored messages the view holds as they are, and left-out ones nowhere in the view", () => {
      fc.assert(
        fc.property(case_, ({ messages, policy }) => {
          const view = viewOrBudgetError(messages, policy);
          if (!view) return;
          const held = new Set(view.messages);
          view.dispositions.forEach((d, i) => {
            if (d.fate === "sent") expect(view.messages[d.viewIndex]).toBe(messages[i]);
            if (d.fate === "repaired" || d.fate === "notice" || d.fate === "left-out") expect(held.has(messages[i])).toBe(false);
          });
          // Every view message is the system part, a stub or synthetic result, or stands for stored messages.
          const pointed = new Set(view.dispositions.filter(withView).map((d) => d.viewIndex));
          view.messages.forEach((message, j) => {
            if (pointed.has(j)) return;
            const standIn = message instanceof SystemMessage || message.content === NO_ANSWER_STUB || message.content === INTERRUPTED_TOOL_RESULT;
            expect(standIn, `view message ${j} (${message.type}) stands for no stored message`).toBe(true);
          });
          // A stored message the view holds unchanged in the active turn is `sent`; in a finished pair, `condensed`.
          view.messages.forEach((message, j) => {
            const i = messages.indexOf(message);
            if (i >= 0) expect(["sent", "condensed"]).toContain(view.dispositions[i].fate);
            if (i >= 0) expect((view.dispositions[i] as { viewIndex: number }).viewIndex).toBe(j);
          });
        }),
        { numRuns: RUNS },
      );
    });

    it("returns view positions in the stored order, and counts that agree with the statistics", () => {
      fc.assert(
        fc.property(case_, ({ messages, policy }) => {
          const view = viewOrBudgetError(messages, policy);
          if (!view) return;
          const placed = view.dispositions.filter(withView).filter((d) => !(d.fate === "notice" && d.notice === "out-of-sight"));
          for (let k = 1; k < placed.length; k++) expect(placed[k].viewIndex).toBeGreaterThanOrEqual(placed[k - 1].viewIndex);
          const count = (test: (d: MessageDisposition) => boolean) => view.dispositions.filter(test).length;
          const { stats } = view;
          expect(count((d) => d.fate === "condensed" && d.part === "question")).toBe(stats.finishedTurnsKept);
          expect(count((d) => d.fate === "condensed" && d.part === "answer")).toBe(stats.finishedTurnsKept - stats.repairs.stubbedAnswers);
          expect(count((d) => d.fate === "notice" && d.notice === "tool-output")).toBe(stats.omittedOutputs.length);
          expect(count((d) => d.fate === "left-out" && d.reason === "orphan-tool-result")).toBe(stats.repairs.orphanToolResults);
          const droppedTurns = new Set(view.dispositions.filter((d) => d.fate === "left-out" && d.reason === "over-budget").map((d) => d.turn));
          expect(droppedTurns.size).toBe(stats.finishedTurnsDroppedForBudget);
          if (count((d) => d.fate === "notice" && d.notice === "out-of-sight") > 0) expect(policy.outOfSight).toBeDefined();
        }),
        { numRuns: RUNS },
      );
    });

    it("returns sent, condensed and left out as exchange for a well-formed thread", () => {
      const state = [user("q1"), calls([["t1", "sql_query"]]), result("t1", "rows"), answer("a1"), user("q2"), calls([["c1", "sql_query"]]), result("c1", "x")];
      expect(fates(buildModelView(state, policy()))).toEqual([
        "question@1",
        "left-out:exchange",
        "left-out:exchange",
        "answer@2",
        "sent@3",
        "sent@4",
        "sent@5",
      ]);
    });

    it("returns outside-window, or out-of-sight with the notice, for turns older than the kept ones", () => {
      const state = [user("q1"), answer("a1"), user("q2"), answer("a2"), user("q3")];
      expect(fates(buildModelView(state, policy({ finishedTurns: 1 })))).toEqual([
        "left-out:outside-window",
        "left-out:outside-window",
        "question@1",
        "answer@2",
        "sent@3",
      ]);
      const noticed = buildModelView(state, policy({ finishedTurns: 1, outOfSight: { toolName: "search_conversation" } }));
      expect(fates(noticed).slice(0, 2)).toEqual(["out-of-sight", "out-of-sight"]);
      expect(noticed.dispositions[0]).toMatchObject({ viewIndex: 0, turn: 0 });
    });

    it("returns over-budget for a kept turn dropped to fit the budget", () => {
      const state = [user(`q1 ${rows(300)}`), answer("a1"), user("q2"), answer("a2"), user("q3")];
      const view = buildModelView(state, policy({ systemPrompt: "", totalBudget: 60 }));
      expect(fates(view)).toEqual(["left-out:over-budget", "left-out:over-budget", "question@0", "answer@1", "sent@2"]);
    });

    it("returns a notice for an output over the threshold, offloaded or dropped to fit the budget", () => {
      const state = [
        user("q"),
        calls([
          ["c1", "sql_query"],
          ["c2", "sql_query"],
        ]),
        offloaded("c1", "art_1", 50),
        result("c2", rows(300)),
      ];
      expect(fates(buildModelView(state, policy({ systemPrompt: "" })))).toEqual(["sent@0", "sent@1", "notice:over-threshold:art_1@2", "sent@3"]);
      expect(fates(buildModelView(state, policy({ systemPrompt: "", totalBudget: 400 })))[3]).toBe("notice:over-budget@3");
    });

    it("returns repaired for blank text, empty output, unusable tool calls and merged assistant messages", () => {
      const state = [
        user("q"),
        answer("Thinking."),
        calls(
          [
            ["c1", "sql_query"],
            [undefined, "sql_query"],
          ],
          "Checking.",
        ),
        result("c1", " "),
      ];
      const view = buildModelView(state, policy({ systemPrompt: "" }));
      expect(fates(view)).toEqual(["sent@0", "repaired:merged@1", "repaired:merged@1", "repaired:empty@2"]);
      expect(view.messages[2].content).toBe(EMPTY_TOOL_OUTPUT);
      const blocks = [
        { type: "text" as const, text: "q" },
        { type: "text" as const, text: " " },
      ];
      const repaired = buildModelView(
        [
          user("x"),
          answer("y"),
          new HumanMessage({ content: blocks }),
          calls([
            ["c1", "sql_query"],
            ["", "sql_query"],
          ]),
        ],
        policy(),
      );
      expect(fates(repaired).slice(2)).toEqual(["repaired:blank-text@3", "repaired:tool-calls@4"]);
    });

    it("returns left out with its reason for stored system messages, leading, orphan, blank and trailing messages", () => {
      const state = [
        new SystemMessage("old prompt"),
        answer("Hello!"),
        user("q"),
        result("nobody", "orphan"),
        calls([], " "),
        calls([["c1", "sql_query"]]),
        result("c1", "rows"),
        calls([[undefined, "sql_query"]], "About to call."),
      ];
      expect(fates(buildModelView(state, policy({ systemPrompt: "" })))).toEqual([
        "left-out:system",
        "left-out:before-first-question",
        "sent@0",
        "left-out:orphan-tool-result",
        "left-out:blank",
        "sent@1",
        "sent@2",
        "left-out:trailing-text",
      ]);
    });
  });
});
