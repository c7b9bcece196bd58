import type { AIMessage, BaseMessage, ToolMessage } from "@langchain/core/messages";
import { combinedProvenance, type Provenance } from "../auth/data-visibility.js";
import { provenanceOf, WITHHELD_ANCHOR, withheldPeriod } from "./provenance.js";
import { countRecurringTextTokens } from "./token-counter.js";
import { callFilters } from "./turn-digest.js";
import type { LedgerEntry, ParameterLedgerPolicy } from "./types.js";

/**
 * On in the product: the last 2 anchors, within 80 tokens (a month filter's line is 13). Every
 * time-anchor case of the sufficiency suite is direct with 3 (with 2, one is a search away); with 4
 * the 50-turn view is 10.4 % of full replay's, with 3 10.2 % (docs/sufficiency.md).
 */
export const DEFAULT_PARAMETER_LEDGER: ParameterLedgerPolicy = { entries: 2, tokens: 80 };

export const PARAMETER_LEDGER_HEADING = "Earlier periods:";

/** A column named for time, or a literal that is a date or month (`'2026-10'`, `"2026-07-01"`). */
const TIME_COLUMN = /^(?:'[^']*'\[)?\[?[\w.]*(?:date|month|year|quarter|week|day|period|time)[\w.]*\]?\s/i;
const DATE_LITERAL = /['"]\d{4}-\d{2}(?:-\d{2})?(?:[T ][\d:.]+Z?)?['"]/;

/** Whether a filter (`callFilters`) fixes a period: a time column, or a date or month literal. */
export function isTimeAnchor(filter: string): boolean {
  return TIME_COLUMN.test(filter) || DATE_LITERAL.test(filter);
}

/** The ledger's text for the system part; undefined when it is empty. */
export function ledgerText(ledger: readonly LedgerEntry[]): string | undefined {
  if (ledger.length === 0) return undefined;
  return [PARAMETER_LEDGER_HEADING, ...ledger.map((e) => `- turn ${e.turn}: ${e.filter}`)].join("\n");
}

/** The ledger within the policy's bounds: its last `entries`, then without its oldest while its text is over `tokens`. */
export function boundedLedger(ledger: readonly LedgerEntry[], policy: ParameterLedgerPolicy): LedgerEntry[] {
  let kept = ledger.slice(Math.max(0, ledger.length - Math.max(0, policy.entries)));
  while (kept.length > 0 && countRecurringTextTokens(ledgerText(kept) as string) > policy.tokens) kept = kept.slice(1);
  return kept;
}

/**
 * The ledger once a finished turn (its messages, from its question) has left the view: each time
 * anchor its calls resolved moves to the end, with this turn's number (a filter set again is kept
 * once, as its latest turn), and the ledger is bounded (`boundedLedger`). Oldest first. Pure and
 * deterministic: folding the same turns in the same order gives the same ledger, whether a turn was
 * archived out of the thread (`lib/agent/graph.ts`) or only left the window.
 */
export function ledgerAfterTurn(ledger: readonly LedgerEntry[], turn: number, messages: readonly BaseMessage[], policy: ParameterLedgerPolicy): LedgerEntry[] {
  // Each anchor keeps the provenance of the output its call fetched (a filter is as confidential as what it selected).
  const results = new Map<string, Provenance | undefined>();
  for (const m of messages) if (m.type === "tool") results.set((m as ToolMessage).tool_call_id, provenanceOf(m));
  const anchors = new Map<string, Provenance[]>();
  const add = (filter: string, provenance: Provenance | undefined) =>
    anchors.set(filter, [...(anchors.get(filter) ?? []), ...(provenance ? [provenance] : [])]);
  for (const m of messages) {
    if (m.type !== "ai") continue;
    for (const call of (m as AIMessage).tool_calls ?? []) {
      const provenance = call.id === undefined ? undefined : results.get(call.id);
      if (withheldPeriod(call.args)) add(WITHHELD_ANCHOR, undefined);
      for (const filter of callFilters(call.args)) if (isTimeAnchor(filter)) add(filter, provenance);
    }
  }
  if (anchors.size === 0) return boundedLedger(ledger, policy);
  const next = ledger.filter((e) => !anchors.has(e.filter));
  for (const [filter, provenances] of anchors) next.push({ turn, filter, ...(provenances.length > 0 && { provenance: combinedProvenance(...provenances) }) });
  return boundedLedger(next, policy);
}

/** `ledgerAfterTurn` over several turns, oldest first. */
export function ledgerAfterTurns(
  ledger: readonly LedgerEntry[],
  turns: readonly { turnNumber: number; messages: readonly BaseMessage[] }[],
  policy: ParameterLedgerPolicy,
): LedgerEntry[] {
  let next = [...ledger];
  for (const t of turns) next = ledgerAfterTurn(next, t.turnNumber, t.messages, policy);
  return next;
}
