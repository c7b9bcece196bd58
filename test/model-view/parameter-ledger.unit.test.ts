import { AIMessage, type BaseMessage } from "@langchain/core/messages";
import { describe, expect, it } from "vitest";
import { archivePlan } from "../../lib/agent/working-set.js";
import {
  buildModelView,
  countTextTokens,
  DEFAULT_PARAMETER_LEDGER,
  DEFAULT_TURN_DIGEST,
  isTimeAnchor,
  ledgerAfterTurn,
  ledgerAfterTurns,
  ledgerText,
  PARAMETER_LEDGER_HEADING,
  type LedgerEntry,
} from "../../lib/model-view/index.js";
import { answer, policy as basePolicy, result, user } from "./histories.js";

/** A finished turn whose query compares with `where`, or a turn without tools when `where` is undefined. */
function turn(n: number, where?: string): BaseMessage[] {
  if (where === undefined) return [user(`q${n}`), answer(`a${n}`)];
  const call = new AIMessage({
    content: "",
    tool_calls: [{ id: `c${n}`, name: "sql_query", args: { sql: `SELECT sum(revenue) FROM sales WHERE ${where}` }, type: "tool_call" }],
  });
  return [user(`q${n}`), call, result(`c${n}`, "1 row (truncated: no)\nrevenue\n12.5"), answer(`a${n}`)];
}

const month = (m: number) => `month = '2026-${String(m).padStart(2, "0")}'`;

/** Turns 1…n (numbered from 1), the k-th querying `where(k)`, then the active question. */
function thread(n: number, where: (k: number) => string | undefined): BaseMessage[] {
  const messages: BaseMessage[] = [];
  for (let k = 1; k <= n; k++) messages.push(...turn(k, where(k)));
  messages.push(user("And last month by channel?"));
  return messages;
}

const policy = basePolicy({ historyBlockTurns: 6, turnDigest: DEFAULT_TURN_DIGEST, parameterLedger: DEFAULT_PARAMETER_LEDGER });
const systemText = (messages: readonly BaseMessage[], history = {}) => String(buildModelView(messages, policy, history).messages[0].content);

describe("isTimeAnchor", () => {
  it("takes a filter on a time column or with a date literal, not another filter", () => {
    expect(isTimeAnchor("month = '2026-10'")).toBe(true);
    expect(isTimeAnchor("order_date BETWEEN '2026-07-01' AND '2026-09-30'")).toBe(true);
    expect(isTimeAnchor(`'Date'[Month] = "2026-07"`)).toBe(true);
    expect(isTimeAnchor("created >= '2026-01-01'")).toBe(true);
    expect(isTimeAnchor("region = 'West'")).toBe(false);
    expect(isTimeAnchor("quantity > 10")).toBe(false);
  });
});

describe("ledgerAfterTurn", () => {
  it("keeps the time anchors of a turn's calls, with the turn's number, and not its other filters", () => {
    const ledger = ledgerAfterTurn([], 4, turn(4, `region = 'South' AND ${month(10)}`), DEFAULT_PARAMETER_LEDGER);
    expect(ledger).toEqual([{ turn: 4, filter: month(10) }]);
    expect(ledgerText(ledger)).toBe(`${PARAMETER_LEDGER_HEADING}\n- turn 4: month = '2026-10'`);
  });

  it("keeps the last `entries` distinct anchors, a filter set again once, as its latest turn", () => {
    let ledger: LedgerEntry[] = [];
    for (const [t, m] of [
      [1, 3],
      [2, 4],
      [3, 3],
      [4, 5],
      [5, 6],
    ] as const)
      ledger = ledgerAfterTurn(ledger, t, turn(t, month(m)), { entries: 3, tokens: 1_000 });
    expect(ledger).toEqual([
      { turn: 3, filter: month(3) },
      { turn: 4, filter: month(5) },
      { turn: 5, filter: month(6) },
    ]);
  });

  it("drops the oldest anchors while the text is over its tokens", () => {
    const long = "order_date BETWEEN '2026-07-01' AND '2026-09-30'";
    let ledger: LedgerEntry[] = [];
    for (let t = 1; t <= 5; t++) ledger = ledgerAfterTurn(ledger, t, turn(t, t % 2 === 0 ? long : month(t)), { entries: 10, tokens: 40 });
    expect(countTextTokens(ledgerText(ledger) as string)).toBeLessThanOrEqual(40);
    expect(ledger.at(-1)).toEqual({ turn: 5, filter: month(5) });
    expect(ledger.length).toBeLessThan(4);
  });

  it("leaves the ledger as it was after a turn that resolved no time anchor", () => {
    const ledger = ledgerAfterTurn([], 1, turn(1, month(10)), DEFAULT_PARAMETER_LEDGER);
    expect(ledgerAfterTurn(ledger, 2, turn(2, "region = 'East'"), DEFAULT_PARAMETER_LEDGER)).toEqual(ledger);
    expect(ledgerAfterTurn(ledger, 3, turn(3), DEFAULT_PARAMETER_LEDGER)).toEqual(ledger);
  });
});

describe("the ledger in the view", () => {
  it("shows the anchors of the turns before the window in the system part, never a kept turn's", () => {
    // 13 finished turns: the window keeps turns 13-18... here 7-13 (numbered from 1), turns 1-6 are out of sight.
    const messages = thread(13, (k) => (k === 2 ? month(10) : k === 9 ? month(8) : undefined));
    const system = systemText(messages);
    expect(system).toContain(`${PARAMETER_LEDGER_HEADING}\n- turn 2: month = '2026-10'`);
    expect(system).not.toContain("2026-08");
  });

  it("is the same whether the turns before the window were archived or are still in the thread", () => {
    const messages = thread(25, (k) => (k % 4 === 1 ? month((k % 12) + 1) : undefined));
    const plan = archivePlan(messages, 0, policy);
    expect(plan?.archivedTurns).toBeGreaterThan(0);
    if (!plan) return;
    const parameterLedger = ledgerAfterTurns([], plan.turns, DEFAULT_PARAMETER_LEDGER);
    expect(systemText(plan.kept, { archivedTurns: plan.archivedTurns, parameterLedger })).toBe(systemText(messages));
  });

  it("stays the same across turns that move no turn out of the window, and changes when the window moves", () => {
    const where = (k: number) => month((k % 12) + 1);
    const systems = [12, 13, 14, 15, 16, 17, 18].map((n) => systemText(thread(n, where)));
    // 12 to 17 finished turns keep turns 7 on: the ledger of turns 1-6 does not change.
    expect(new Set(systems.slice(0, 6)).size).toBe(1);
    expect(systems[0]).toContain("- turn 6: month = '2026-07'");
    // At 18 the window moves to turn 13: turns 7-12 join the ledger.
    expect(systems[6]).not.toBe(systems[5]);
    expect(systems[6]).toContain("- turn 12: month = '2026-01'");
  });

  it("never holds more than its bounds, however long the conversation", () => {
    for (const n of [20, 60, 200]) {
      const system = systemText(thread(n, (k) => (k % 2 === 0 ? month((k % 12) + 1) : `order_date BETWEEN '2026-0${(k % 9) + 1}-01' AND '2026-09-30'`)));
      const ledger = system.slice(system.indexOf(PARAMETER_LEDGER_HEADING));
      expect(ledger.split("\n").length - 1).toBeLessThanOrEqual(DEFAULT_PARAMETER_LEDGER.entries);
      expect(countTextTokens(ledger)).toBeLessThanOrEqual(DEFAULT_PARAMETER_LEDGER.tokens);
    }
  });

  it("is absent without the policy's ledger", () => {
    const messages = thread(13, (k) => (k === 2 ? month(10) : undefined));
    expect(String(buildModelView(messages, { ...policy, parameterLedger: undefined }).messages[0].content)).not.toContain(PARAMETER_LEDGER_HEADING);
  });
});
