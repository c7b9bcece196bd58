import type { AIMessage } from "@langchain/core/messages";
import { describe, expect, it } from "vitest";
import { buildModelView, DEFAULT_TURN_DIGEST, TURN_DIGEST_HEADING, turnDigest } from "../../lib/model-view/index.js";
import { answer, calls, offloaded, policy, result, user } from "./histories.js";

const TABLE = ["4 rows (truncated: no)", "customer | revenue", "Helios | 900.5", "Cobalt | 800.25", "Juniper | 700", "Orchard | 650.75"].join("\n");

function turn(n: number, output = TABLE) {
  return [user(`q${n}`), calls([[`c${n}`, "sql_query"]]), result(`c${n}`, output), answer(`a${n}`)];
}

const text = (m: { content: unknown }) => String(m.content);

describe("turnDigest", () => {
  it("returns each tool call with its arguments and a recent turn's output", () => {
    const digest = turnDigest(turn(1), DEFAULT_TURN_DIGEST, true);
    expect(digest.split("\n")[0]).toBe(TURN_DIGEST_HEADING);
    expect(digest).toContain('- sql_query {"query":"sql_query c1"}');
    expect(digest).toContain("  Orchard | 650.75");
  });

  it("returns only the calls of a turn that is no longer recent", () => {
    const digest = turnDigest(turn(1), DEFAULT_TURN_DIGEST, false);
    expect(digest).toContain("- sql_query");
    expect(digest).not.toContain("Orchard");
  });

  it("returns an offloaded output's handle, never its preview", () => {
    const messages = [user("q"), calls([["c1", "sql_query"]]), offloaded("c1", "art_0123456789abcdef01234567", 5_000), answer("a")];
    const digest = turnDigest(messages, DEFAULT_TURN_DIGEST, true);
    expect(digest).toContain("5000 tokens, stored as art_0123456789abcdef01234567; read it with read_tool_output");
    expect(digest).not.toContain("north,1200");
  });

  it("returns the output's first whole lines within its token share, and says how many were left out", () => {
    const digest = turnDigest(turn(1), { ...DEFAULT_TURN_DIGEST, outputTokens: 16 }, true);
    expect(digest).toContain("  customer | revenue");
    expect(digest).not.toContain("Orchard");
    expect(digest).toMatch(/… \d more lines not shown/);
  });

  it("returns nothing for a turn without tool calls", () => {
    expect(turnDigest([user("q"), answer("a")], DEFAULT_TURN_DIGEST, true)).toBe("");
  });
});

describe("buildModelView", () => {
  describe("with a turn digest", () => {
    const digestPolicy = policy({ finishedTurns: 3, historyBlockTurns: 3, turnDigest: { ...DEFAULT_TURN_DIGEST, recentTurns: 1 } });

    it("returns each kept answer followed by its digest, outputs for the block's last turns and those after it only", () => {
      const view = buildModelView([...turn(1), ...turn(2), ...turn(3), user("and the fourth one?")], digestPolicy);
      const answers = view.messages.filter((m) => m.type === "ai") as AIMessage[];
      expect(answers.map((a) => text(a).split("\n\n")[0])).toEqual(["a1", "a2", "a3"]);
      expect(answers.map((a) => text(a).includes("Orchard | 650.75"))).toEqual([false, false, true]);
      expect(answers.every((a) => text(a).includes("- sql_query"))).toBe(true);
    });

    it("returns every kept answer unchanged on the next turn while the history block stays", () => {
      const three = [...turn(1), ...turn(2), ...turn(3)];
      const before = buildModelView([...three, user("next")], digestPolicy);
      const after = buildModelView([...three, ...turn(4), user("next")], digestPolicy);
      // system, then (question, answer) pairs: turn n's answer is message 2n.
      for (const n of [1, 2, 3]) expect(text(after.messages[2 * n])).toBe(text(before.messages[2 * n]));
      expect(text(after.messages[8])).toContain("Orchard | 650.75");
    });

    it("returns the answers exactly as stored without one", () => {
      const view = buildModelView([...turn(1), user("next")], policy());
      expect(text(view.messages[2])).toBe("a1");
    });

    it("counts the digest in the view's tokens and keeps the budget", () => {
      const state = [...turn(1), ...turn(2), user("next")];
      const plain = buildModelView(state, policy());
      const digested = buildModelView(state, policy({ turnDigest: DEFAULT_TURN_DIGEST }));
      expect(digested.stats.viewTokens).toBeGreaterThan(plain.stats.viewTokens);
      const tight = buildModelView(state, policy({ turnDigest: DEFAULT_TURN_DIGEST, totalBudget: plain.stats.viewTokens + 20 }));
      expect(tight.stats.viewTokens).toBeLessThanOrEqual(plain.stats.viewTokens + 20);
      expect(tight.stats.finishedTurnsDroppedForBudget).toBeGreaterThan(0);
    });
  });
});
