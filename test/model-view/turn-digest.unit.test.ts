import { ToolMessage, type AIMessage } from "@langchain/core/messages";
import { describe, expect, it } from "vitest";
import {
  buildModelView,
  callParameters,
  countTextTokens,
  DEFAULT_TURN_DIGEST,
  DIGEST_WHOLE_OUTPUT_TOKENS,
  TURN_DIGEST_HEADING,
  turnDigest,
} from "../../lib/model-view/index.js";
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
    expect(digest).toContain("\nOrchard | 650.75");
  });

  it("returns only the calls of a turn that is no longer recent", () => {
    const digest = turnDigest(turn(1), DEFAULT_TURN_DIGEST, false);
    expect(digest).toContain("- sql_query");
    expect(digest).not.toContain("Orchard");
  });

  it("returns an offloaded output's handle, never its preview", () => {
    const messages = [user("q"), calls([["c1", "sql_query"]]), offloaded("c1", "art_0123456789abcdef01234567", 5_000), answer("a")];
    const digest = turnDigest(messages, DEFAULT_TURN_DIGEST, true);
    expect(digest).toContain('- sql_query {"query":"sql_query c1"} → output art_0123456789abcdef01234567, 5000 tokens');
    expect(digest).not.toContain("north,1200");
  });

  it("returns the output's first whole lines within its token share, and says how many were left out", () => {
    const digest = turnDigest(turn(1), { ...DEFAULT_TURN_DIGEST, outputTokens: 16 }, true);
    expect(digest).toContain("\ncustomer | revenue");
    expect(digest).not.toContain("Orchard");
    expect(digest).toMatch(/… \d more lines not shown/);
  });

  it("returns a short output whole and gives the rest of the turn's share to a longer one", () => {
    const long = ["12 rows (truncated: no)", "customer | revenue", ...Array.from({ length: 12 }, (_, i) => `Customer ${i + 1} | ${1000 + i}.5`)].join("\n");
    const messages = [
      user("q"),
      calls([
        ["c1", "sql_query"],
        ["c2", "sql_query"],
      ]),
      result("c1", "1 row (truncated: no)\norders\n425"),
      result("c2", long),
      answer("a"),
    ];
    const digest = turnDigest(messages, { ...DEFAULT_TURN_DIGEST, outputTokens: 120 }, true);
    expect(digest).toContain("orders\n425");
    // An even split (60 tokens each) would stop the long output before its ninth row.
    expect(digest).toContain("Customer 9 | 1008.5");
  });

  it("returns no output of a read_tool_output call, whose arguments read it again", () => {
    const messages = [user("q"), calls([["c1", "read_tool_output"]]), result("c1", "Orchard | 650.75", "read_tool_output"), answer("a")];
    const digest = turnDigest(messages, DEFAULT_TURN_DIGEST, true);
    expect(digest).toContain("- read_tool_output");
    expect(digest).not.toContain("Orchard");
  });

  it("returns the handle of a stored output it does not show, or cuts, so nothing a tool returned becomes unreachable (issue 46)", () => {
    const handle = "art_aaaaaaaaaaaaaaaaaaaaaaaa";
    const long = Array.from({ length: 60 }, (_, i) => `Customer ${i + 1} | ${1_000 + i}`).join("\n");
    const stored = new ToolMessage({
      content: long,
      tool_call_id: "c1",
      name: "sql_query",
      artifact: { handle, bytes: long.length, tokens: 600, preview: "", inline: true },
    });
    const messages = [user("q"), calls([["c1", "sql_query"]]), stored, answer("a")];
    // Recent: the first lines, then the count of lines left out and the handle that reads them.
    expect(turnDigest(messages, DEFAULT_TURN_DIGEST, true)).toMatch(new RegExp(`more lines not shown: ${handle}$`));
    // Not recent: no output, the handle alone, on the call's line.
    expect(turnDigest(messages, DEFAULT_TURN_DIGEST, false).split("\n").slice(1)).toEqual([`- sql_query {"query":"sql_query c1"} → output ${handle}`]);
    // Without a stored copy (before issue 46) the rows past the excerpt had no way back.
    const inline = [user("q"), calls([["c1", "sql_query"]]), result("c1", long), answer("a")];
    expect(turnDigest(inline, DEFAULT_TURN_DIGEST, false)).not.toContain("art_");
  });

  it("returns an output no longer than its handle whole, in a turn that is no longer recent too, instead of the handle", () => {
    const handle = "art_bbbbbbbbbbbbbbbbbbbbbbbb";
    const small = "1 row (truncated: no)\norders\n365";
    const stored = new ToolMessage({
      content: small,
      tool_call_id: "c1",
      name: "sql_query",
      artifact: { handle, bytes: small.length, tokens: 10, preview: "", inline: true },
    });
    const digest = turnDigest([user("q"), calls([["c1", "sql_query"]]), stored, answer("a")], DEFAULT_TURN_DIGEST, false);
    // Before, a turn no longer recent named the handle (22 tokens) of an output of 11: one read_tool_output call away.
    expect(digest.split("\n").slice(1)).toEqual(['- sql_query {"query":"sql_query c1"}', "1 row (truncated: no)", "orders", "365"]);
    expect(countTextTokens(small)).toBeLessThanOrEqual(DIGEST_WHOLE_OUTPUT_TOKENS);
  });

  it("returns a failed or refused call's first line whether or not the turn is recent", () => {
    const refused = new ToolMessage({
      content: "Not run: Maria rejected this call, saying: not now.",
      tool_call_id: "c1",
      name: "create_follow_up",
      status: "error",
    });
    const messages = [user("q"), calls([["c1", "create_follow_up"]]), refused, answer("a")];
    expect(turnDigest(messages, DEFAULT_TURN_DIGEST, false)).toContain("  Not run: Maria rejected this call, saying: not now.");
  });

  it("returns nothing for a turn without tool calls", () => {
    expect(turnDigest([user("q"), answer("a")], DEFAULT_TURN_DIGEST, true)).toBe("");
  });
});

describe("callParameters", () => {
  it("returns the filters a query compares with literals, once each, instead of the query", () => {
    const sql =
      "SELECT category, sum(revenue) FROM sales WHERE region = 'North' AND segment = 'Enterprise' AND month = '2026-08' " +
      "AND order_id IN (SELECT order_id FROM orders WHERE channel = 'Online') AND region = 'North' GROUP BY category HAVING margin_pct > 10";
    expect(callParameters({ sql }, 400)).toBe("where region = 'North', segment = 'Enterprise', month = '2026-08', channel = 'Online', margin_pct > 10");
  });

  it("returns a range, a list and a DAX filter whole", () => {
    expect(callParameters({ sql: "SELECT 1 FROM sales WHERE order_date BETWEEN '2026-07-01' AND '2026-09-30' AND region IN ('East', 'West')" }, 400)).toBe(
      "where order_date BETWEEN '2026-07-01' AND '2026-09-30', region IN ('East', 'West')",
    );
    expect(callParameters({ dax: `EVALUATE FILTER ( 'Date', 'Date'[Month] = "2026-07" )` }, 400)).toBe(`where 'Date'[Month] = "2026-07"`);
  });

  it("returns the arguments, clipped, when they hold no filter", () => {
    expect(callParameters({ query: "discount approval above 15% VP" }, 400)).toBe('{"query":"discount approval above 15% VP"}');
    expect(callParameters({ query: "x".repeat(50) }, 20)).toBe(`{"query":"${"x".repeat(10)}…`);
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
