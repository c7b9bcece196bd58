import type { AIMessage, BaseMessage, ToolMessage } from "@langchain/core/messages";
import { messageText } from "./message-text.js";
import { READ_TOOL_OUTPUT_TOOL } from "./tool-output-notice.js";
import { countRecurringTextTokens } from "./token-counter.js";
import { offloadedArtifact, storedArtifact } from "./tool-output-artifact.js";
import type { TurnDigestPolicy } from "./types.js";

/** The digest a kept finished turn shows after its answer when `ModelViewPolicy.turnDigest` is set. */
export const DEFAULT_TURN_DIGEST: TurnDigestPolicy = { recentTurns: 1, outputTokens: 180, argsChars: 400 };

/** Opens the digest, so the model can tell it from what it said. */
export const TURN_DIGEST_HEADING = "[Tools used:]";

function clipChars(text: string, chars: number): string {
  if (text.length <= chars) return text;
  const end = /[\uD800-\uDBFF]/.test(text[chars - 1]) ? chars - 1 : chars;
  return `${text.slice(0, end)}…`;
}

function firstLine(text: string): string {
  return text.trim().split("\n", 1)[0] ?? "";
}

/** What a line costs in a digest: its tokens and its line break. */
const lineTokens = (line: string) => countRecurringTextTokens(line) + 1;

/** The tokens of the output's lines, counted only up to `most` (tokenizing a long output whole on every build is slow). */
function linesTokens(output: string, most: number): number {
  let used = 0;
  for (const line of output.split("\n")) {
    used += lineTokens(line);
    if (used >= most) return most;
  }
  return used;
}

/** The output's first whole lines within `tokens`, and how many lines were left out (naming the handle that reads them, when there is one). */
function headLines(output: string, tokens: number, handle?: string): string {
  const lines = output.split("\n");
  const kept: string[] = [];
  let used = 0;
  for (const line of lines) {
    const cost = lineTokens(line);
    if (used + cost > tokens) break;
    kept.push(line);
    used += cost;
  }
  const rest = lines.length - kept.length;
  if (rest === 0) return kept.join("\n");
  const more = `… ${rest} more line${rest === 1 ? "" : "s"} not shown`;
  return `${kept.join("\n")}\n${handle ? `${more}: ${handle}` : more}`;
}

/**
 * Tokens up to which a digest shows a stored output whole in any turn, recent or not: about what
 * naming its handle costs (" → output art_…", 15 tokens), so a one-row answer is cheaper in view
 * than one call away.
 */
export const DIGEST_WHOLE_OUTPUT_TOKENS = 16;

/** Characters of a failed or refused call's output a digest shows, whichever turn it is in: what went wrong, in a line. */
export const DIGEST_ERROR_CHARS = 240;

/** The output without its blank lines, which cost tokens and say nothing in a digest. */
function withoutBlankLines(output: string): string {
  return output
    .split("\n")
    .filter((line) => line.trim().length > 0)
    .join("\n");
}

/**
 * How many tokens of each output a recent turn's digest shows: the outputs share `tokens`, the
 * smallest first, each taking what it needs up to an even share of what is left, so a short output
 * leaves the rest to the others.
 */
function outputShares(outputs: readonly ToolMessage[], tokens: number): Map<ToolMessage, number> {
  const needs = outputs.map((output) => ({
    output,
    need: linesTokens(withoutBlankLines(messageText(output.content)), tokens),
  }));
  needs.sort((a, b) => a.need - b.need);
  const shares = new Map<ToolMessage, number>();
  let left = tokens;
  needs.forEach(({ output, need }, i) => {
    const share = Math.min(need, Math.floor(left / (needs.length - i)));
    shares.set(output, share);
    left -= share;
  });
  return shares;
}

const LITERAL = String.raw`'[^']*'|"[^"]*"|-?\d+(?:\.\d+)?`;
/**
 * A comparison of a column with a literal in a query's text (SQL or DAX): `region = 'West'`,
 * `order_date BETWEEN '2026-07-01' AND '2026-09-30'`, `'Date'[Month] = "2026-07"`, `channel IN ('A', 'B')`.
 */
const FILTER = new RegExp(
  String.raw`(?:'[^']+'\[[^\]]+\]|\[[^\]]+\]|\b[A-Za-z_][\w.]*)\s*(?:=|<>|!=|>=|<=|>|<|\bLIKE\b|\bIN\b|\bBETWEEN\b)\s*` +
    String.raw`(?:${LITERAL}|\((?:\s*(?:${LITERAL})\s*,?)+\))(?:\s+AND\s+(?:${LITERAL}))?`,
  "gi",
);

/** The filters a call's string arguments compare with literals, in order and once each, spaces collapsed. */
export function callFilters(args: Record<string, unknown> | undefined): string[] {
  const filters: string[] = [];
  for (const value of Object.values(args ?? {})) {
    if (typeof value !== "string") continue;
    for (const match of value.matchAll(FILTER)) {
      const filter = match[0].replace(/\s+/g, " ");
      if (!filters.includes(filter)) filters.push(filter);
    }
  }
  return filters;
}

/**
 * The resolved parameters of a call: the filters its string arguments compare with literals (the
 * month "last month" meant, the segment a query set), in order and once each, as `where a = 'x', …`;
 * the arguments themselves as JSON, clipped to `chars`, when they hold none (a search's query).
 */
export function callParameters(args: Record<string, unknown> | undefined, chars: number): string {
  const filters = callFilters(args);
  return filters.length > 0 ? `where ${filters.join(", ")}` : clipChars(JSON.stringify(args ?? {}), chars);
}

/**
 * The digest of a finished turn's tool exchange (`messages` is the turn, from its question): each
 * call's tool and resolved parameters (`callParameters`); for an offloaded output, its handle on the
 * call's line (` → output art_…, N tokens`); for a call that failed or did not run (`status:
 * "error"`), its output's first line; in a recent turn, the first lines of the outputs the view has
 * no other way to (all but offloaded ones and `read_tool_output`'s, which the same call reads again),
 * the turn's outputs sharing `outputTokens` (`outputShares`); in any turn, an output of at most
 * `DIGEST_WHOLE_OUTPUT_TOKENS` whole; and the handle of every stored output (`storedArtifact`) the
 * digest does not show whole, so nothing a tool returned becomes unreachable. Empty when the turn called no tool. A turn's
 * digest depends only on the turn and on whether it is recent, so the history's text changes only
 * when a turn stops being recent (which the view makes coincide with the history block moving).
 */
export function turnDigest(messages: readonly BaseMessage[], policy: TurnDigestPolicy, recent: boolean): string {
  const results = new Map<string, ToolMessage>();
  for (const m of messages) if (m.type === "tool") results.set((m as ToolMessage).tool_call_id, m as ToolMessage);
  const calls = messages.flatMap((m) => (m.type === "ai" ? ((m as AIMessage).tool_calls ?? []) : []));
  const shown = (call: (typeof calls)[number]) => {
    const result = call.id === undefined ? undefined : results.get(call.id);
    return result && !offloadedArtifact(result) && call.name !== READ_TOOL_OUTPUT_TOOL && result.status !== "error" ? result : undefined;
  };
  const shares = recent
    ? outputShares(
        calls.map((call) => shown(call)).filter((r) => r !== undefined),
        policy.outputTokens,
      )
    : new Map();
  const lines: string[] = [];
  for (const call of calls) {
    const result = call.id === undefined ? undefined : results.get(call.id);
    const artifact = result && offloadedArtifact(result);
    const output = shown(call);
    const text = output && withoutBlankLines(messageText(output.content));
    const share = output && shares.get(output);
    const whole = text !== undefined && !share && linesTokens(text, DIGEST_WHOLE_OUTPUT_TOKENS + 1) <= DIGEST_WHOLE_OUTPUT_TOKENS;
    const handle = output && storedArtifact(output)?.handle;
    // The handle on the call's line: of an offloaded output, with its size; of a stored one the digest does not show.
    let line = `- ${call.name} ${callParameters(call.args, policy.argsChars)}`;
    if (artifact) line += ` → output ${artifact.handle}, ${artifact.tokens} tokens`;
    else if (handle && !share && !whole) line += ` → output ${handle}`;
    lines.push(line);
    if (result?.status === "error") lines.push(`  ${clipChars(firstLine(messageText(result.content)), DIGEST_ERROR_CHARS)}`);
    if (text !== undefined && share) lines.push(headLines(text, share, handle));
    else if (text !== undefined && whole) lines.push(text);
  }
  return lines.length === 0 ? "" : `${TURN_DIGEST_HEADING}\n${lines.join("\n")}`;
}
