import { describe, expect, it } from "vitest";
import type { BaseMessage } from "@langchain/core/messages";
import { archivePlan, DEFAULT_ARCHIVE_BLOCK_TURNS } from "../../lib/agent/working-set.js";
import { buildModelView, EMPTY_OUT_OF_SIGHT_SUMMARY, summaryAfterTurns, type ModelViewPolicy } from "../../lib/model-view/index.js";
import { answer, calls, fingerprint, offloaded, policy, result, rows, user } from "../model-view/histories.js";

/** Turn `t` of a conversation: a question, most with a tool call and its result (some offloaded), and the answer. */
function turnMessages(t: number): BaseMessage[] {
  const question = user(`question ${t}`);
  if (t % 4 === 3) return [question, answer(`answer ${t}`)];
  const id = `call-${t}`;
  const output = t % 5 === 0 ? offloaded(id, `art_${t}`, 9_000) : result(id, rows(50 + (t % 7) * 40));
  return [question, calls([[id, "sql_query"]]), output, answer(`answer ${t}`)];
}

const CACHE = { minTokensPerCheckpoint: 64, stableTtl: "1h", turnTtl: "5m" } as const;
const POLICIES: [string, ModelViewPolicy][] = [
  [
    "the defaults (6 turns, blocks of 6), cache points, the out-of-sight notice",
    policy({ historyBlockTurns: 6, cache: CACHE, outOfSight: { toolName: "search_conversation" } }),
  ],
  ["a window moving one turn at a time", policy({ finishedTurns: 3, historyBlockTurns: 1, outOfSight: { toolName: "search_conversation" } })],
  ["a tight budget that drops kept turns", policy({ finishedTurns: 6, historyBlockTurns: 6, totalBudget: 2_500, cache: CACHE })],
];

describe("archivePlan", () => {
  describe.each(POLICIES)("with %s", (_name, viewPolicy) => {
    it("leaves every model call of a 40-turn conversation the view it had with the whole thread", () => {
      const whole: BaseMessage[] = [];
      let working: BaseMessage[] = [];
      let archivedTurns = 0;
      let archives = 0;
      // What the archived turns were about, kept in state by the archive step for the out-of-sight notice (issue 46).
      let summary = EMPTY_OUT_OF_SIGHT_SUMMARY;
      for (let t = 1; t <= 40; t++) {
        const [question, ...rest] = turnMessages(t);
        whole.push(question);
        working.push(question);
        // As the graph does at the start of a turn: archive a block once it is due, then call the model.
        const plan = archivePlan(working, archivedTurns, viewPolicy);
        if (plan) {
          expect(plan.turns.map((turn) => turn.turnNumber)).toEqual(Array.from({ length: plan.turns.length }, (_, k) => archivedTurns + k + 1));
          expect(plan.turns.flatMap((turn) => turn.messages).concat(plan.kept)).toEqual(working);
          working = plan.kept;
          archivedTurns = plan.archivedTurns;
          summary = summaryAfterTurns(summary, plan.turns);
          archives++;
        }
        // Each model call of the turn: after the question, and after the tool result.
        for (let step = 0; step <= rest.length; step++) {
          if (step > 0 && rest[step - 1].type === "ai" && !(rest[step - 1] as { tool_calls?: unknown[] }).tool_calls?.length) break;
          const before = buildModelView(whole, viewPolicy);
          const after = buildModelView(working, viewPolicy, { archivedTurns, outOfSight: summary });
          expect(fingerprint(after.messages)).toBe(fingerprint(before.messages));
          expect(after.stats.cachePoints).toEqual(before.stats.cachePoints);
          expect(after.stats.finishedTurnsKept).toBe(before.stats.finishedTurnsKept);
          // The same dispositions for the messages the working set holds, turns counted from the conversation's first.
          expect(after.dispositions).toEqual(before.dispositions.slice(whole.length - working.length));
          if (step < rest.length) {
            whole.push(rest[step]);
            working.push(rest[step]);
          }
        }
      }
      expect(archives).toBeGreaterThan(0);
      expect(working.filter((m) => m.type === "human").length).toBeLessThanOrEqual(
        viewPolicy.finishedTurns + (viewPolicy.historyBlockTurns ?? 1) - 1 + DEFAULT_ARCHIVE_BLOCK_TURNS,
      );
    });
  });

  describe("when nothing is due", () => {
    it("returns undefined while fewer than a block of turns lie before the window", () => {
      const thread = (finished: number) => [...Array.from({ length: finished }, (_, t) => turnMessages(t + 1)).flat(), user("the active question")];
      for (const historyBlockTurns of [1, 6]) {
        expect(archivePlan(thread(11), 0, policy({ finishedTurns: 6, historyBlockTurns }))).toBeUndefined();
        expect(archivePlan(thread(12), 0, policy({ finishedTurns: 6, historyBlockTurns }))?.archivedTurns).toBe(6);
        // Counted from the conversation's first turn: six already archived, the next six are due six turns later.
        expect(archivePlan(thread(11), 6, policy({ finishedTurns: 6, historyBlockTurns }))).toBeUndefined();
      }
    });
  });
});
