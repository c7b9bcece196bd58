import type { AIMessage, BaseMessage } from "@langchain/core/messages";
import { messageText } from "./message-text.js";

/** What the finished turns out of sight were about, for the out-of-sight notice: tool calls and topic words, counted (`summaryAfterTurn`). */
export interface OutOfSightSummary {
  tools: Record<string, number>;
  words: Record<string, number>;
  /** The names their questions used (`namesIn`), the most recent first, at most `OUT_OF_SIGHT_NAMES`; absent in a summary folded before names were kept. */
  names?: string[];
}

/**
 * The notice's count moves in steps of this many turns. 1: the exact count, which changes only when
 * the window's first turn moves (a block of `historyBlockTurns` at a time), when the history is
 * written to the prompt cache again anyway (issue 46: "at least 1" where 6 were hidden misled).
 */
export const DEFAULT_OUT_OF_SIGHT_STEP_TURNS = 1;

/** Words of the turns out of sight the notice names, the most frequent. */
export const OUT_OF_SIGHT_TOPIC_WORDS = 6;
/**
 * Names of the turns out of sight the notice gives (and the summary keeps), the most recently used
 * first: a customer, a person, a document asked about once far back is what a frequency count of
 * words loses, and what a later question names when it refers back.
 */
export const OUT_OF_SIGHT_NAMES = 6;
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

/** Capitalized words that name a period, not a thing: the ledger of time anchors carries periods. */
const PERIOD_WORDS = new Set(
  "january february march april may june july august september october november december monday tuesday wednesday thursday friday saturday sunday".split(" "),
);

/**
 * The names a question uses: runs of capitalized words ("Orchard Analytics Associates", "West"),
 * possessive and punctuation off, a run opening a sentence only when it has two words or more (a
 * sentence's first word is capitalized anyway; a function word opening it is dropped), months and
 * weekdays left out, once each.
 */
export function namesIn(question: string): string[] {
  const names: string[] = [];
  let run: string[] = [];
  let runOpensSentence = false;
  let sentenceStart = true;
  const close = () => {
    // A sentence's first word is capitalized anyway: a function word there ("And Central") is no part of the name.
    if (runOpensSentence && run.length > 0 && COMMON.has(run[0].toLowerCase())) {
      run = run.slice(1);
      runOpensSentence = false;
    }
    if (run.length > 1 || (run.length === 1 && !runOpensSentence)) {
      const name = run.join(" ");
      if (!names.includes(name)) names.push(name);
    }
    run = [];
  };
  for (const token of question.split(/\s+/u).filter((t) => t.length > 0)) {
    const word = token
      .replace(/^[^\p{L}\p{N}]+/u, "")
      .replace(/['’]s\b.*$/u, "")
      .replace(/[^\p{L}\p{N}&.-]+$/u, "")
      .replace(/\.$/u, "");
    const capitalized = /^\p{Lu}[\p{L}\p{N}&.-]*$/u.test(word) && word.length > 1 && !PERIOD_WORDS.has(word.toLowerCase());
    if (capitalized) {
      if (run.length === 0) runOpensSentence = sentenceStart;
      run.push(word);
    } else close();
    // A word ending a sentence ends the run too: "…from Acme. Then Beta" are two names.
    if (/[.?!:;,]["')\]]*$/u.test(token)) close();
    sentenceStart = /[.?!:]["')\]]*$/u.test(token);
  }
  close();
  return names;
}

const byCount = (a: [string, number], b: [string, number]) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);

/**
 * The summary once a finished turn (its messages, from its question) has left the view: the tools it
 * called and its question's topic words are counted, the words bounded to the most frequent
 * `OUT_OF_SIGHT_SUMMARY_WORDS`; its question's names (`namesIn`) go first in `names`. Pure and
 * deterministic, folded like the ledgers (the same archived or not).
 */
export function summaryAfterTurn(summary: OutOfSightSummary, messages: readonly BaseMessage[]): OutOfSightSummary {
  const tools = { ...summary.tools };
  const words = { ...summary.words };
  for (const m of messages) {
    if (m.type === "ai") for (const call of (m as AIMessage).tool_calls ?? []) tools[call.name] = (tools[call.name] ?? 0) + 1;
  }
  const question = messages.find((m) => m.type === "human");
  const text = question ? messageText(question.content) : "";
  for (const word of topicWords(text)) words[word] = (words[word] ?? 0) + 1;
  const kept = Object.entries(words).sort(byCount).slice(0, OUT_OF_SIGHT_SUMMARY_WORDS);
  const fresh = namesIn(text);
  const names = [...fresh, ...(summary.names ?? []).filter((n) => !fresh.includes(n))].slice(0, OUT_OF_SIGHT_NAMES);
  return { tools, words: Object.fromEntries(kept), ...(names.length > 0 && { names }) };
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
 * to a step when `stepTurns` is over 1), what they were about (their most frequent topic words), the
 * names their questions used, the most recent first, and the tools that ran in them, and the tool that searches them. None when none are.
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
  const names = summary.names ?? [];
  // A word of a name the notice gives says nothing more as a topic word.
  const named = new Set(names.flatMap((n) => n.toLowerCase().split(" ")));
  const words = Object.entries(summary.words)
    .filter(([w]) => !named.has(w))
    .sort(byCount)
    .slice(0, OUT_OF_SIGHT_TOPIC_WORDS)
    .map(([w]) => w);
  const tools = Object.entries(summary.tools)
    .sort(byCount)
    .map(([name, n]) => `${name} ×${n}`);
  const what = [
    words.length > 0 && `they were about ${words.join(", ")}`,
    names.length > 0 && `named ${names.join(", ")}`,
    tools.length > 0 && `tools that ran: ${tools.join(", ")}`,
  ].filter(Boolean);
  return (
    `${count} not shown to you${what.length > 0 ? ` (${what.join("; ")})` : ""}. ` +
    `When the user refers to something said before that you cannot see, call ${policy.toolName} to search those turns.`
  );
}
