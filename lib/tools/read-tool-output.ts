import { z } from "zod";
import { ToolError } from "../errors.js";
import { withheldFrom, withheldNotice } from "../auth/data-visibility.js";
import { countTextTokens } from "../model-view/token-counter.js";
import type { ArtifactStore, StoredArtifact } from "../store/artifact-store.js";
import type { ToolContext, ToolDefinition } from "./tool.js";

export const READ_TOOL_OUTPUT_NAME = "read_tool_output";
/**
 * Ceiling on one answer, in tokens. Below the view's default per-output threshold (2,000), so
 * an answer is never itself replaced by a notice; keep it below `view.toolOutputTokens`.
 */
export const DEFAULT_READ_MAX_TOKENS = 1_500;
/** Lines returned when `lineCount` is not given (the token ceiling may cut earlier). */
export const DEFAULT_READ_LINE_COUNT = 200;
/** Matching lines returned when `maxMatches` is not given. */
export const DEFAULT_READ_MAX_MATCHES = 50;
/** Longer lines are shown as several numbered lines of at most this many characters, so one huge line can still be paged. */
export const DEFAULT_READ_WRAP_CHARS = 500;

/** JSON nested deeper is read as its text: indenting n levels writes about n² spaces, so depth must not scale with size. */
const MAX_INDENTED_DEPTH = 32;
const MAX_LINE_COUNT = 2_000;
const MAX_MATCHES = 500;
// Room kept for the closing note that tells the model how to get the next part.
const FOOTER_TOKENS = 60;

const schema = z.object({
  handle: z.string().min(1).describe("The handle given in the notice that replaced the tool output, e.g. art_0123456789abcdef01234567."),
  startLine: z.number().int().min(1).optional().describe("First line to return (1-based, default 1). With search: the first line searched."),
  lineCount: z
    .number()
    .int()
    .min(1)
    .max(MAX_LINE_COUNT)
    .optional()
    .describe(`How many lines to return (default ${DEFAULT_READ_LINE_COUNT}). With search: how many lines to search.`),
  search: z.string().min(1).max(200).optional().describe("Case-insensitive text: return only the lines that contain it, with their line numbers."),
  maxMatches: z.number().int().min(1).max(MAX_MATCHES).optional().describe(`With search: most matching lines to return (default ${DEFAULT_READ_MAX_MATCHES}).`),
});

export type ReadToolOutputInput = z.infer<typeof schema>;

export interface ReadToolOutputOptions {
  /** Default: DEFAULT_READ_MAX_TOKENS. */
  maxTokens?: number;
  /** Default: DEFAULT_READ_WRAP_CHARS. */
  wrapChars?: number;
}

/** Whether a parsed JSON value nests deeper than `limit`, found without recursion. */
function nestsDeeper(value: unknown, limit: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  for (let next = stack.pop(); next; next = stack.pop()) {
    const [node, depth] = next;
    if (node === null || typeof node !== "object") continue;
    if (depth >= limit) return true;
    for (const child of Object.values(node)) stack.push([child, depth + 1]);
  }
  return false;
}

/**
 * The output as the tool numbers it: JSON arrays one element per line, other JSON
 * pretty-printed (a one-line JSON document has no lines to page through) unless it nests deeper
 * than `MAX_INDENTED_DEPTH`, then long lines wrapped.
 */
export function readableLines(content: string, wrapChars = DEFAULT_READ_WRAP_CHARS): string[] {
  let text = content;
  const trimmed = content.trim();
  if (trimmed.startsWith("[") || trimmed.startsWith("{")) {
    try {
      const parsed: unknown = JSON.parse(trimmed);
      if (Array.isArray(parsed)) text = parsed.map((item) => JSON.stringify(item)).join("\n");
      else if (!nestsDeeper(parsed, MAX_INDENTED_DEPTH)) text = JSON.stringify(parsed, null, 2);
    } catch {
      // Not JSON after all: read it as text.
    }
  }
  const lines: string[] = [];
  for (const line of text.split(/\r?\n/)) {
    if (line.length <= wrapChars) {
      lines.push(line);
      continue;
    }
    for (let start = 0; start < line.length; ) {
      let end = Math.min(start + wrapChars, line.length);
      const last = line.charCodeAt(end - 1);
      if (end < line.length && last >= 0xd800 && last <= 0xdbff) end -= 1;
      lines.push(line.slice(start, end));
      start = end;
    }
  }
  return lines;
}

/** Cuts a single line that alone is over the budget, keeping as much as fits. */
export function fitLine(line: string, budget: number): string {
  let low = 0;
  let high = line.length;
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (countTextTokens(`${line.slice(0, mid)}…`) <= budget) low = mid;
    else high = mid - 1;
  }
  return `${line.slice(0, low)}…`;
}

interface Numbered {
  number: number;
  text: string;
}

/** Takes lines while they fit in the budget; reports whether the budget cut the list. */
function takeWithinBudget(lines: Numbered[], budget: number): { shown: string[]; cut: boolean; lastShown: number } {
  const shown: string[] = [];
  let used = 0;
  let lastShown = 0;
  for (const line of lines) {
    const formatted = `${line.number}: ${line.text}`;
    const tokens = countTextTokens(formatted) + 1;
    if (used + tokens > budget) {
      if (shown.length === 0) {
        shown.push(fitLine(formatted, budget));
        lastShown = line.number;
      }
      return { shown, cut: true, lastShown };
    }
    shown.push(formatted);
    used += tokens;
    lastShown = line.number;
  }
  return { shown, cut: false, lastShown };
}

function describe(artifact: StoredArtifact, totalLines: number): string {
  return `${artifact.handle} (output of ${artifact.toolName}, ${totalLines} lines, ${artifact.tokens} tokens)`;
}

function readRange(artifact: StoredArtifact, lines: string[], input: ReadToolOutputInput, budget: number): string {
  const start = input.startLine ?? 1;
  const end = Math.min(lines.length, start + (input.lineCount ?? DEFAULT_READ_LINE_COUNT) - 1);
  const wanted = lines.slice(start - 1, end).map((text, i) => ({ number: start + i, text }));
  const header = `${describe(artifact, lines.length)}, lines ${start}-${end}:`;
  const { shown, cut, lastShown } = takeWithinBudget(wanted, budget - countTextTokens(header));
  let footer: string;
  if (cut) footer = `[Cut at the answer size limit after line ${lastShown}. Next part: startLine=${lastShown + 1}.]`;
  else if (end < lines.length) footer = `[Lines ${end + 1}-${lines.length} not shown. Next part: startLine=${end + 1}.]`;
  else footer = "[End of output.]";
  return [header, ...shown, footer].join("\n");
}

function readMatches(artifact: StoredArtifact, lines: string[], input: ReadToolOutputInput & { search: string }, budget: number): string {
  const start = input.startLine ?? 1;
  const end = input.lineCount === undefined ? lines.length : Math.min(lines.length, start + input.lineCount - 1);
  const maxMatches = input.maxMatches ?? DEFAULT_READ_MAX_MATCHES;
  const needle = input.search.toLowerCase();
  const matches: Numbered[] = [];
  let searchedTo = end;
  for (let number = start; number <= end; number += 1) {
    if (!lines[number - 1].toLowerCase().includes(needle)) continue;
    if (matches.length === maxMatches) {
      searchedTo = number - 1;
      break;
    }
    matches.push({ number, text: lines[number - 1] });
  }
  const scope = `lines ${start}-${end}`;
  const header = `${describe(artifact, lines.length)}, lines containing ${JSON.stringify(input.search)} (case-insensitive) in ${scope}:`;
  if (matches.length === 0) return `${header}\n[No line matches.]`;
  const { shown, cut, lastShown } = takeWithinBudget(matches, budget - countTextTokens(header));
  let footer: string;
  if (cut) footer = `[Cut at the answer size limit after line ${lastShown}. More matches: same search with startLine=${lastShown + 1}.]`;
  else if (searchedTo < end) footer = `[Stopped at ${maxMatches} matches. More matches: same search with startLine=${searchedTo + 1}.]`;
  else footer = `[${matches.length} matching line(s); search complete.]`;
  return [header, ...shown, footer].join("\n");
}

/**
 * `read_tool_output`: a bounded, narrower part of a tool output that the model view replaced by
 * a notice — a range of lines, or the lines matching a search — read from the artifact store,
 * scoped to the calling conversation, and only for a caller allowed to use the tool that produced it.
 */
export function createReadToolOutputTool(artifacts: ArtifactStore, options: ReadToolOutputOptions = {}): ToolDefinition<typeof schema> {
  const maxTokens = options.maxTokens ?? DEFAULT_READ_MAX_TOKENS;
  const wrapChars = options.wrapChars ?? DEFAULT_READ_WRAP_CHARS;
  return {
    name: READ_TOOL_OUTPUT_NAME,
    description:
      "Read part of a tool output that was too large to show in full. Pass the handle from the notice, and either a line range " +
      `(startLine, lineCount) or a case-insensitive search that returns matching lines with their numbers. Answers are capped at about ${maxTokens} tokens ` +
      "and end with how to get the next part. Line numbers refer to the output as this tool shows it (JSON arrays one element per line).",
    schema,
    sideEffects: false,
    // Its text comes from outside the conversation (or repeats what such a tool returned): it may carry instructions.
    trust: "untrusted",
    async run(input: ReadToolOutputInput, ctx: ToolContext): Promise<string> {
      const handle = input.handle.trim();
      const artifact = await artifacts.get(handle, { conversationId: ctx.conversationId, reader: ctx.caller.principal });
      if (!artifact) {
        throw new ToolError(
          `No tool output with handle ${JSON.stringify(handle)} in this conversation. Use the handle exactly as the notice gives it.`,
          READ_TOOL_OUTPUT_NAME,
        );
      }
      // An output is as confidential as its tool: whoever may not call the tool may not read what it returned.
      if (!ctx.mayUse(artifact.toolName)) {
        throw new ToolError(`You are not permitted to read the output of ${artifact.toolName}, so ${handle} cannot be shown.`, READ_TOOL_OUTPUT_NAME);
      }
      // And as confidential as the way it was fetched: the roles that allowed it then, the user whose own credentials fetched it.
      const provenance = artifact.provenance ?? (ctx.sourceOf ? [ctx.sourceOf(artifact.toolName)] : []);
      const withheld = withheldFrom(provenance, ctx.caller);
      if (withheld) throw new ToolError(`${handle} cannot be shown. ${withheldNotice(withheld)}`, READ_TOOL_OUTPUT_NAME);
      // What this call returns repeats the artifact: it is seen only by whoever may see the artifact.
      ctx.derivedFrom?.(provenance);
      const lines = readableLines(artifact.content, wrapChars);
      const start = input.startLine ?? 1;
      if (start > lines.length) {
        throw new ToolError(`startLine ${start} is past the end: the output has ${lines.length} lines.`, READ_TOOL_OUTPUT_NAME);
      }
      const budget = maxTokens - FOOTER_TOKENS;
      return input.search === undefined ? readRange(artifact, lines, input, budget) : readMatches(artifact, lines, { ...input, search: input.search }, budget);
    },
  };
}
