import type { AIMessage, BaseMessage } from "@langchain/core/messages";
import { messageText } from "./message-text.js";

/** What the finished turns out of sight were about, for the out-of-sight notice: tool calls and topic words, counted (`summaryAfterTurn`). */
export interface OutOfSightSummary {
  tools: Record<string, number>;
  words: Record<string, number>;
}

/**
 * The notice's count moves in steps of this many turns. 1: the exact count, which changes only when
 * the window's first turn moves (a block of `historyBlockTurns` at a time), when the history is
 * written to the prompt cache again anyway (issue 46: "at least 1" where 6 were hidden misled).
 */
export const DEFAULT_OUT_OF_SIGHT_STEP_TURNS = 1;

/** Words of the turns out of sight the notice names, the most frequent. */
export const OUT_OF_SIGHT_TOPIC_WORDS = 8;
/** Words the summary counts, the most frequent (a bound on the thread's state, whatever its length). */
export const OUT_OF_SIGHT_SUMMARY_WORDS = 40;

/** How the view tells the model that earlier turns exist out of its sight. */
export interface OutOfSightPolicy {
  /** The tool that searches them (`search_conversation`). */
  toolName: string;
  /** Default: {@link DEFAULT_OUT_OF_SIGHT_STEP_TURNS}. */
  stepTurns?: number;
}

/** Words that name no topic, left out of the notice. */
const COMMON = new Set(
  (
    "about above after again also and any are back been before being below between both but can could did does doing done down during each " +
    "earlier ever every few from further had has have having here how into its just last like made make more most much must next now only other " +
    "our ours over own please same should show some such than that thanks the their them then there these they this those through under until " +
    "very want was were what when where which while who whom why will with would you your yours give tell list many well let okay good help " +
    "remind move moving sure note"
  ).split(" "),
);

/** The topic words of a question: lower-cased words of four letters or more, once each, common ones left out. */
function topicWords(question: string): string[] {
  const words = question.toLowerCase().match(/\p{L}[\p{L}'’-]*\p{L}/gu) ?? [];
  return [...new Set(words.filter((w) => w.length >= 4 && !COMMON.has(w)))];
}

const byCount = (a: [string, number], b: [string, number]) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);

/**
 * The summary once a finished turn (its messages, from its question) has left the view: the tools it
 * called and its question's topic words are counted, the words bounded to the most frequent
 * `OUT_OF_SIGHT_SUMMARY_WORDS`. Pure and deterministic, folded like the ledgers (the same archived or not).
 */
export function summaryAfterTurn(summary: OutOfSightSummary, messages: readonly BaseMessage[]): OutOfSightSummary {
  const tools = { ...summary.tools };
  const words = { ...summary.words };
  for (const m of messages) {
    if (m.type === "ai") for (const call of (m as AIMessage).tool_calls ?? []) tools[call.name] = (tools[call.name] ?? 0) + 1;
  }
  const question = messages.find((m) => m.type === "human");
  for (const word of question ? topicWords(messageText(question.content)) : []) words[word] = (words[word] ?? 0) + 1;
  const kept = Object.entries(words).sort(byCount).slice(0, OUT_OF_SIGHT_SUMMARY_WORDS);
  return { tools, words: Object.fromEntries(kept) };
}

/** `summaryAfterTurn` over several turns, oldest first. */
export function summaryAfterTurns(summary: OutOfSightSummary, turns: readonly { messages: readonly BaseMessage[] }[]): OutOfSightSummary {
  let next = summary;
  for (const t of turns) next = summaryAfterTurn(next, t.messages);
  return next;
}

export const EMPTY_OUT_OF_SIGHT_SUMMARY: OutOfSightSummary = { tools: {}, words: {} };

/**
 * The line added to the system part when finished turns are out of sight: their count (rounded down
 * to a step when `stepTurns` is over 1), what they were about (their most frequent topic words) and
 * the tools that ran in them, and the tool that searches them. None when none are.
 */
export function outOfSightNotice(hiddenTurns: number, policy: OutOfSightPolicy, summary: OutOfSightSummary = EMPTY_OUT_OF_SIGHT_SUMMARY): string | undefined {
  if (hiddenTurns <= 0) return undefined;
  const step = policy.stepTurns ?? DEFAULT_OUT_OF_SIGHT_STEP_TURNS;
  let count: string;
  if (step <= 1) count = hiddenTurns === 1 ? "The first turn of this conversation is" : `The first ${hiddenTurns} turns of this conversation are`;
  else {
    const shown = Math.max(1, Math.floor(hiddenTurns / step) * step);
    count = shown === 1 ? "At least 1 earlier turn of this conversation is" : `At least ${shown} earlier turns of this conversation are`;
  }
  const words = Object.entries(summary.words)
    .sort(byCount)
    .slice(0, OUT_OF_SIGHT_TOPIC_WORDS)
    .map(([w]) => w);
  const tools = Object.entries(summary.tools)
    .sort(byCount)
    .map(([name, n]) => `${name} ×${n}`);
  const what = [words.length > 0 && `they were about ${words.join(", ")}`, tools.length > 0 && `tools that ran: ${tools.join(", ")}`].filter(Boolean);
  return (
    `${count} not shown to you${what.length > 0 ? ` (${what.join("; ")})` : ""}. ` +
    `When the user refers to something said before that you cannot see, call ${policy.toolName} to search those turns.`
  );
}
