import type { BaseMessage } from "@langchain/core/messages";
import { withheldFrom, withheldNotice, type Provenance } from "../auth/data-visibility.js";
import type { Caller, Principal } from "../auth/principal.js";
import { messageText } from "../model-view/message-text.js";
import { countMessageTokens } from "../model-view/token-counter.js";
import type { MessageDisposition, ModelViewStats } from "../model-view/types.js";

/**
 * What a turn and its model calls record: the view as sent, the statistics and usage of each
 * call, and the context figures a turn reports. The agent writes these, the store keeps them, the
 * API and the recall index read them.
 */

/** One message of a model view as it was sent, in a channel-neutral shape. */
export interface ViewMessage {
  role: "system" | "user" | "assistant" | "tool";
  content: string;
  toolCalls?: { id: string; name: string; args: unknown }[];
  toolCallId?: string;
  toolName?: string;
  /** Tokens of the message, tool calls included, as the view counted them; absent on calls recorded before it was kept. */
  tokens?: number;
  /** A tool output's provenance (`lib/auth/data-visibility.ts`), beside it; absent on outputs stored without one. */
  provenance?: Provenance;
}

export interface Usage {
  /** Every input token, those read from or written to the prompt cache included. */
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  /** Input tokens read from the prompt cache. Absent in records made before prompt caching. */
  cacheReadTokens?: number;
  /** Input tokens written to the prompt cache. Absent in records made before prompt caching. */
  cacheWriteTokens?: number;
  /** What the call (or turn) cost in US dollars, by its model's configured price; absent when the model has none. */
  costUsd?: number;
}

export const ZERO_USAGE: Usage = { inputTokens: 0, outputTokens: 0, totalTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };

export function addUsage(a: Usage, b: Usage): Usage {
  const sum: Usage = {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    totalTokens: a.totalTokens + b.totalTokens,
    cacheReadTokens: (a.cacheReadTokens ?? 0) + (b.cacheReadTokens ?? 0),
    cacheWriteTokens: (a.cacheWriteTokens ?? 0) + (b.cacheWriteTokens ?? 0),
  };
  if (a.costUsd !== undefined || b.costUsd !== undefined) sum.costUsd = (a.costUsd ?? 0) + (b.costUsd ?? 0);
  return sum;
}

/** What one model call was sent and what it cost. */
export interface ModelCallRecord {
  turnId: string;
  index: number;
  startedAt: Date;
  durationMs: number;
  view: ViewMessage[];
  stats: ModelViewStats;
  /**
   * What the view did with each stored message, in the stored order; absent on calls recorded before
   * it was kept. Stored as runs (`compactDispositions`): the messages of a turn out of the window, or
   * of a finished turn's tool exchange, are one entry; `expandDispositions` gives one per message.
   */
  dispositions?: DispositionRun[];
  /** As reported by the model; zero when it reports nothing. */
  usage: Usage;
  /** (estimated − reported) / reported input tokens, the estimate being `stats.estimatedInputTokens`; absent when the model reported none. */
  estimateError?: number;
  toolCalls: string[];
  /**
   * What the view drew on (`lib/auth/data-visibility.ts`): the provenance of every tool output and
   * time anchor the caller could see and the view was built from. Whoever may not see one of them
   * may not see this view (the inspector withholds it). Absent on calls recorded before it was kept.
   */
  sources?: Provenance;
}

/** Consecutive stored messages the view did exactly the same with (the same turn included), as one entry of `count` (default 1). */
export type DispositionRun = MessageDisposition & { count?: number };

/** The dispositions as runs of equal ones: a call's record grows with the turns in its view, not with every message behind them. */
export function compactDispositions(dispositions: readonly MessageDisposition[]): DispositionRun[] {
  const runs: DispositionRun[] = [];
  let previous = "";
  for (const disposition of dispositions) {
    const key = JSON.stringify(disposition);
    const last = runs[runs.length - 1];
    if (last && key === previous) last.count = (last.count ?? 1) + 1;
    else runs.push({ ...disposition });
    previous = key;
  }
  return runs;
}

/** One disposition per stored message again, from runs (records written before runs are one per message already). */
export function expandDispositions(runs: readonly DispositionRun[]): MessageDisposition[] {
  return runs.flatMap(({ count, ...disposition }) => Array.from({ length: count ?? 1 }, () => ({ ...disposition }) as MessageDisposition));
}

/** The context figures of a turn: the last model call's view against the full state. */
export interface TurnContextSummary {
  modelCalls: number;
  stateTokens: number;
  viewTokens: number;
  budget: number;
  finishedTurnsKept: number;
  omittedOutputs: number;
}

export function summarizeContext(calls: ModelCallRecord[]): TurnContextSummary {
  const last: ModelViewStats | undefined = calls[calls.length - 1]?.stats;
  return {
    modelCalls: calls.length,
    stateTokens: last?.stateTokens ?? 0,
    viewTokens: last?.viewTokens ?? 0,
    budget: last?.budget ?? 0,
    finishedTurnsKept: last?.finishedTurnsKept ?? 0,
    omittedOutputs: calls.reduce((n, c) => n + c.stats.omittedOutputs.length, 0),
  };
}

const ROLE_BY_TYPE: Record<string, ViewMessage["role"]> = { system: "system", human: "user", ai: "assistant", tool: "tool" };

/**
 * The view exactly as sent, in the channel-neutral shape the turn record keeps, with each message's
 * tokens as the view counted them, and each tool output's provenance (by its call id) beside it.
 */
export function toViewMessages(messages: readonly BaseMessage[], provenance?: ReadonlyMap<string, Provenance>): (ViewMessage & { tokens: number })[] {
  return messages.map((message) => {
    const role = ROLE_BY_TYPE[message.getType()] ?? "user";
    const record: ViewMessage & { tokens: number } = { role, content: messageText(message.content), tokens: countMessageTokens(message) };
    const toolCalls = (message as { tool_calls?: { id?: string; name: string; args: unknown }[] }).tool_calls;
    if (role === "assistant" && toolCalls?.length) {
      record.toolCalls = toolCalls.map((c) => ({ id: c.id ?? "", name: c.name, args: c.args }));
    }
    if (role === "tool") {
      const tool = message as { tool_call_id?: string; name?: string };
      record.toolCallId = tool.tool_call_id;
      if (tool.name) record.toolName = tool.name;
      const source = tool.tool_call_id === undefined ? undefined : provenance?.get(tool.tool_call_id);
      if (source) record.provenance = source;
    }
    return record;
  });
}

/** How the notice that stands for a model call's view the inspector withholds begins. */
export const WITHHELD_VIEW_NOTICE = "This model call's view drew on data you may not see.";

/**
 * A turn's model calls as `viewer` may inspect them: a call whose view drew on a source that refuses
 * the viewer (`ModelCallRecord.sources`) keeps its numbers (usage, statistics, tool names) and shows,
 * instead of its view and dispositions, one notice saying what is withheld and why. A call recorded
 * before `sources` was kept is withheld from anyone but the turn's asker (`askedBy`), who saw it when it ran.
 * The turn's question and answer are not here: they were posted in the thread, and stay visible.
 */
export function callsSeenBy<C extends ModelCallRecord>(calls: readonly C[], viewer: Caller, askedBy: Principal | undefined): C[] {
  const asker =
    askedBy === undefined ||
    (askedBy.issuer === viewer.principal.issuer && askedBy.tenant === viewer.principal.tenant && askedBy.subject === viewer.principal.subject);
  return calls.map((call) => {
    const withheld = call.sources ? withheldFrom(call.sources, viewer) : asker ? undefined : ({ tool: "a tool", why: "user" } as const);
    if (!withheld) return call;
    const notice = `${WITHHELD_VIEW_NOTICE} ${withheldNotice(withheld)}`;
    const { dispositions: _left, ...rest } = call;
    return { ...rest, view: [{ role: "system", content: notice }] } as unknown as C;
  });
}

/**
 * Stored messages as `viewer` may read them (`GET …/state`, `GET …/archive`): a tool output whose
 * provenance refuses the viewer is the notice (`withheldNotice`) without its artifact, and the call
 * that asked for it shows `{"withheld": true}` instead of its arguments. Questions and answers are
 * kept; messages stored without provenance are shown as they are.
 */
export function messagesSeenBy<M extends ViewMessage & { artifact?: unknown }>(messages: readonly M[], viewer: Caller): M[] {
  const notices = new Map<string, string>();
  for (const m of messages) {
    const withheld = m.role === "tool" && m.provenance ? withheldFrom(m.provenance, viewer) : undefined;
    if (withheld && m.toolCallId !== undefined) notices.set(m.toolCallId, withheldNotice(withheld));
  }
  if (notices.size === 0) return [...messages];
  return messages.map((m) => {
    const notice = m.toolCallId === undefined ? undefined : notices.get(m.toolCallId);
    if (m.role === "tool" && notice !== undefined) {
      const { artifact: _artifact, ...rest } = m;
      return { ...rest, content: notice } as M;
    }
    if (!m.toolCalls?.some((c) => notices.has(c.id))) return m;
    return { ...m, toolCalls: m.toolCalls.map((c) => (notices.has(c.id) ? { ...c, args: { withheld: true } } : c)) };
  });
}
