import { AIMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { combinedProvenance, withheldFrom, withheldNotice, type DataSource, type Provenance } from "../auth/data-visibility.js";
import type { Caller } from "../auth/principal.js";
import { messageText } from "./message-text.js";
import { isTimeAnchor } from "./parameter-ledger.js";
import { provenanceOf, WITHHELD_ANCHOR } from "./provenance.js";
import { stampTokenCount } from "./token-counter.js";
import { callFilters } from "./turn-digest.js";
import type { LedgerEntry } from "./types.js";

/** The arguments a withheld call shows instead of its own (with `period: true` when they set a period, for the time-anchor ledger). */
export const WITHHELD_ARGS = { withheld: true } as const;

/**
 * The source data stored without provenance is judged by: the tool's rules as they are now. With
 * `offered` (the tools the viewer is offered), a tool not among them is withheld.
 */
export function legacySource(offered: ReadonlySet<string>): (toolName: string) => DataSource {
  return (tool) => (offered.has(tool) ? { tool } : { tool, roles: [] });
}

export interface WithheldThread {
  /** The stored messages, one for one: a tool output the viewer may not see is a notice, and its call's arguments withheld. */
  messages: BaseMessage[];
  /** Tool outputs replaced by a notice. */
  withheld: number;
  /** The sources of what the viewer may see and was left in: what a record of the view must be as confidential as. */
  sources: Provenance;
}

/**
 * The thread as `viewer` may see it, before the model view is built from it: each tool output whose
 * provenance (`provenanceOf`, or `legacySource` for one stored without) refuses the viewer becomes a
 * notice (`withheldNotice`, status `error`, so a kept turn's digest shows it whatever its age), with
 * no artifact handle; the call that asked for it shows `WITHHELD_ARGS` (and `period: true` when its
 * filters set a period) instead of its arguments. Questions and answers are kept: they were posted in
 * the thread. One message out for each message in, ids kept, so the view's dispositions still name
 * the stored messages. Pure; unchanged messages are the same objects.
 */
export function withholdMessages(messages: readonly BaseMessage[], viewer: Caller, legacy: (toolName: string) => DataSource): WithheldThread {
  const notices = new Map<string, string>();
  const answered = new Set<string>();
  const visible: Provenance[] = [];
  for (const m of messages) {
    if (m.type !== "tool") continue;
    const tool = m as ToolMessage;
    answered.add(tool.tool_call_id);
    const provenance = provenanceOf(tool) ?? [legacy(tool.name ?? "tool")];
    const withheld = withheldFrom(provenance, viewer);
    if (withheld) notices.set(tool.tool_call_id, withheldNotice(withheld));
    else visible.push(provenance);
  }
  let withheld = 0;
  const out = messages.map((m) => {
    if (m.type === "tool") {
      const tool = m as ToolMessage;
      const notice = notices.get(tool.tool_call_id);
      if (notice === undefined) return m;
      withheld++;
      return stampTokenCount(new ToolMessage({ content: notice, tool_call_id: tool.tool_call_id, name: tool.name, status: "error", id: tool.id }));
    }
    if (m.type !== "ai") return m;
    const ai = m as AIMessage;
    const calls = ai.tool_calls ?? [];
    // A call without a result (an interrupted turn) is judged by its tool, as data stored without provenance is.
    const hidden = (call: (typeof calls)[number]) =>
      call.id !== undefined && (notices.has(call.id) || (!answered.has(call.id) && withheldFrom([legacy(call.name)], viewer) !== undefined));
    if (!calls.some(hidden)) return m;
    const tool_calls = calls.map((call) => {
      if (!hidden(call)) return call;
      const period = callFilters(call.args).some(isTimeAnchor);
      return { ...call, args: { ...WITHHELD_ARGS, ...(period && { period: true }) } };
    });
    // The text only: a provider's content blocks may repeat the calls' inputs.
    return stampTokenCount(new AIMessage({ content: messageText(ai.content), tool_calls, id: ai.id }));
  });
  return { messages: out, withheld, sources: combinedProvenance(...visible) };
}

/**
 * The time anchors archived out of the thread as `viewer` may see them: an entry whose provenance
 * refuses the viewer reads `WITHHELD_ANCHOR` (as one of a turn still in the thread does), kept once
 * as its latest turn. Entries stored without provenance are kept as they are.
 */
export function withholdLedger(ledger: readonly LedgerEntry[], viewer: Caller): LedgerEntry[] {
  const out: LedgerEntry[] = [];
  for (const entry of ledger) {
    if (entry.provenance === undefined || withheldFrom(entry.provenance, viewer) === undefined) {
      out.push(entry);
      continue;
    }
    // Kept once, as its latest turn, as `ledgerAfterTurn` keeps a filter set again.
    const earlier = out.findIndex((e) => e.filter === WITHHELD_ANCHOR);
    if (earlier >= 0) out.splice(earlier, 1);
    out.push({ turn: entry.turn, filter: WITHHELD_ANCHOR });
  }
  return out;
}
