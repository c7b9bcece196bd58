import { z } from "zod";
import { DEFAULT_RECALL_MAX_TOKENS } from "../config/recall-config.js";
import { countTextTokens } from "../model-view/token-counter.js";
import { fitLine } from "../tools/read-tool-output.js";
import type { ToolDefinition } from "../tools/tool.js";
import type { RecallTurnDocument } from "../store/recall-index-store.js";
import type { ModelViewPolicy } from "../model-view/types.js";
import type { ConversationSearch, SearchOutcome } from "./conversation-search.js";
import { recallTerms } from "./recall-terms.js";

export const SEARCH_CONVERSATION_NAME = "search_conversation";
/** Turns one search returns when the model does not say. */
export const DEFAULT_RECALL_RESULTS = 3;
/** Most turns one search may return. */
export const MAX_RECALL_RESULTS = 5;
export { DEFAULT_RECALL_MAX_TOKENS };
/** Longest query, in characters. */
export const MAX_RECALL_QUERY_CHARS = 500;

const schema = z.object({
  query: z
    .string()
    .trim()
    .min(1)
    .max(MAX_RECALL_QUERY_CHARS)
    .describe('What to look for, in words likely to have been used: a topic, a name, a number, a date; "quoted phrases" must appear as written.'),
  maxResults: z.number().int().min(1).max(MAX_RECALL_RESULTS).optional().describe(`How many turns to return (default ${DEFAULT_RECALL_RESULTS}).`),
});

export type SearchConversationInput = z.infer<typeof schema>;

export interface SearchConversationToolOptions {
  search: ConversationSearch;
  /**
   * The view's window (`VIEW_FINISHED_TURNS`, `VIEW_HISTORY_BLOCK_TURNS`): every finished turn is
   * searched, since the view shows none whole, and hits the view keeps are marked as in view in part.
   */
  view: Pick<ModelViewPolicy, "finishedTurns" | "historyBlockTurns">;
  /** Default: {@link DEFAULT_RECALL_MAX_TOKENS}. */
  maxTokens?: number;
  /** Roles allowed to use the tool. Default: everyone. */
  allowedRoles?: readonly string[];
}

/** Characters of the lines past an output's start that a hit shows: the lines that hold the query's terms. */
export const DEFAULT_RECALL_EXCERPT_CHARS = 600;
/** Characters of one such line, a long line clipped. */
const EXCERPT_LINE_CHARS = 300;
/** Lines after a matching one a hit shows with it, up to the paragraph's end: the passage under a heading that matched. */
const EXCERPT_CONTEXT_LINES = 2;
/** A line is shown when it scores at least this share of the best line's score. */
const EXCERPT_MIN_SHARE = 0.5;

/**
 * The lines of an output past its first `previewChars` (the start the hit already shows) that best
 * match the query, whole, in the output's order, within `chars`. Each line scores the query's terms
 * it holds, each term weighted by its rarity among the output's lines (`log(1 + lines / lines holding
 * it)`), so the row or passage a question names outranks lines that share only a word every row has.
 * Lines scoring under `EXCERPT_MIN_SHARE` of the best are left out; each line comes with the next
 * `EXCERPT_CONTEXT_LINES` of its paragraph (up to a blank line), the best first while they fit. None when no line past the start holds a query term.
 */
export function matchingLines(
  output: string,
  previewChars: number,
  queryTerms: ReadonlySet<string>,
  chars = DEFAULT_RECALL_EXCERPT_CHARS,
): string[] | undefined {
  const lines: { text: string; terms: Set<string>; past: boolean }[] = [];
  let at = 0;
  for (const text of output.split("\n")) {
    at += text.length + 1;
    lines.push({ text, terms: new Set(recallTerms(text).filter((t) => queryTerms.has(t))), past: at > previewChars + 1 });
  }
  const holding = new Map<string, number>();
  for (const line of lines) for (const t of line.terms) holding.set(t, (holding.get(t) ?? 0) + 1);
  const weight = (t: string) => Math.log(1 + lines.length / (holding.get(t) ?? 1));
  const scored = lines
    .map((line, index) => ({ index, line, score: [...line.terms].reduce((sum, t) => sum + weight(t), 0) }))
    .filter((s) => s.line.past && s.score > 0 && s.line.text.trim().length > 0)
    .sort((a, b) => b.score - a.score || a.index - b.index);
  // Lines that match much less than the best one are the rows that share a common word with it: left out.
  const strong = scored.filter((s) => s.score >= EXCERPT_MIN_SHARE * scored[0].score);
  const picked = new Map<number, string>();
  let left = chars;
  const clip = (text: string) => (text.length > EXCERPT_LINE_CHARS ? `${text.slice(0, EXCERPT_LINE_CHARS)}…` : text);
  for (const { index } of strong) {
    // The line and the next of its paragraph (a passage's text under its heading, the rows after a row), as far as they fit.
    for (let i = index; i <= index + EXCERPT_CONTEXT_LINES && i < lines.length && lines[i].text.trim().length > 0; i++) {
      if (picked.has(i)) continue;
      const text = clip(lines[i].text);
      if (text.length + 1 > left) break;
      picked.set(i, text);
      left -= text.length + 1;
    }
    if (left <= 0) break;
  }
  return picked.size === 0 ? undefined : [...picked].sort((a, b) => a[0] - b[0]).map(([, text]) => text);
}

/**
 * A hit as the model reads it: its number and time (and whether the view shows it, in part), the
 * question, the answer, and each tool call with the start of its output and, when the rest of the
 * output holds the query's terms, the lines that hold them best (`matchingLines`).
 */
function turnBlock(record: RecallTurnDocument, queryTerms: ReadonlySet<string>, inView: boolean, repeats: readonly number[] = []): string {
  const when = `${record.at.toISOString().slice(0, 16).replace("T", " ")} UTC`;
  const same = repeats.length === 0 ? "" : `; turn${repeats.length === 1 ? "" : "s"} ${repeats.join(", ")} said the same`;
  const lines = [`[Turn ${record.turnNumber}, ${when}${inView ? ", in view in part" : ""}${same}]`, `User: ${record.question}`];
  lines.push(record.status === "completed" ? `Assistant: ${record.answer}` : "Assistant: [no answer: this turn failed]");
  for (const tool of record.tools) {
    const matched = tool.chunks ? matchingLines(`${tool.preview}${tool.chunks.join("")}`, tool.preview.length, queryTerms) : undefined;
    const further = matched ? `\n[… lines further in that output that match the search:]\n${matched.join("\n")}` : "";
    lines.push(`Tool ${tool.name} ${tool.args} returned: ${tool.preview}${further}`);
  }
  return lines.join("\n");
}

/** The answer the model reads: the matching turns, best first, each cut to its share of `maxTokens`. */
export function formatSearchOutcome(query: string, outcome: SearchOutcome, maxTokens: number): string {
  const seen = outcome.indexedTurns - outcome.searchedTurns;
  if (outcome.searchedTurns === 0) {
    return `Nothing to search: ${seen === 0 ? "this conversation has no earlier finished turns" : `all ${seen} earlier turns are already in view`}.`;
  }
  const queryTerms = new Set(recallTerms(query));
  const inView = (record: RecallTurnDocument) => outcome.firstInView !== undefined && record.turnNumber > outcome.firstInView;
  const caveat = outcome.semanticUnavailable ? " Semantic search was unavailable, so this was ranked lexically only." : "";
  const searched =
    outcome.firstInView === undefined
      ? `searched ${outcome.searchedTurns} turns out of view, ranked ${outcome.ranking}`
      : `searched all ${outcome.searchedTurns} earlier turns, ${outcome.firstInView} of them out of view and the last ` +
        `${outcome.searchedTurns - outcome.firstInView} shown to you only in part, ranked ${outcome.ranking}`;
  if (outcome.hits.length === 0) {
    return `No earlier turn matches "${query}" (${searched}).${caveat} Try other words, or say that you do not know.`;
  }
  const header = `${outcome.hits.length} earlier turn${outcome.hits.length === 1 ? "" : "s"} for "${query}", best match first (${searched}).${caveat}`;
  const parts = [header];
  let remaining = maxTokens - countTextTokens(header) - 1;
  outcome.hits.forEach((hit, i) => {
    const share = Math.floor(remaining / (outcome.hits.length - i));
    const block = turnBlock(hit.record, queryTerms, inView(hit.record), hit.repeats);
    const text = countTextTokens(block) + 2 <= share ? block : fitLine(block, share - 2);
    remaining -= countTextTokens(text) + 2;
    parts.push(text);
  });
  return parts.join("\n\n");
}

/**
 * `search_conversation`: looks up what was said in this conversation's finished turns that are out of
 * the model's sight. Scoped to the caller's conversation by the tool context, never by the model's input.
 */
export function createSearchConversationTool(options: SearchConversationToolOptions): ToolDefinition<typeof schema> {
  const maxTokens = options.maxTokens ?? DEFAULT_RECALL_MAX_TOKENS;
  return {
    name: SEARCH_CONVERSATION_NAME,
    description:
      "Searches the earlier turns of this conversation, the ones no longer shown to you and the ones shown only in part (questions, answers, tool calls " +
      "and their whole outputs), and returns the best matches with their turn number and time. Use it when the user refers to something said before " +
      "that you cannot see.",
    schema,
    sideEffects: false,
    // Its text comes from outside the conversation (or repeats what such a tool returned): it may carry instructions.
    trust: "untrusted",
    allowedRoles: options.allowedRoles,
    async run(input, ctx) {
      const outcome = await options.search.search({
        conversationId: ctx.conversationId,
        query: input.query,
        limit: input.maxResults ?? DEFAULT_RECALL_RESULTS,
        view: options.view,
        signal: ctx.signal,
      });
      return formatSearchOutcome(input.query, outcome, maxTokens);
    },
  };
}
