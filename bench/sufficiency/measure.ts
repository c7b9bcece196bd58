/**
 * The measure: for one case and one policy, how each evidence unit is reached (issue 46's four
 * classes, then missing), and the view's tokens (the product's counter):
 * - `in-view`: the unit is in the view sent;
 * - `handle`: one `read_tool_output` on a handle the view names returns it (or Deep Agents' `read_file`
 *   on a path the view names);
 * - `cued-search`: one `search_conversation` with the follow-up as its query returns it, and the view
 *   cues that search: its system part after the prompt (the out-of-sight notice, a ledger) names the
 *   subject, a term the follow-up shares with the unit's turn;
 * - `uncued-search`: the same search returns it, but nothing in the view names the subject: it is
 *   reached only if the model decides to search;
 * - `missing` otherwise.
 * The tools run for real on the case's conversation in the stores. A case is as good as its worst unit.
 * A unit that corrects a fact (`supersedes`) is also checked for staleness: the view, or the search,
 * showing the stale fact without its correction.
 */
import type { AIMessage, BaseMessage } from "@langchain/core/messages";
import { DEFAULT_VIEW_FINISHED_TURNS, DEFAULT_VIEW_HISTORY_BLOCK_TURNS } from "../../lib/config/view-config.js";
import { countMessagesTokens, messageText } from "../../lib/model-view/index.js";
import type { ConversationSearch } from "../../lib/recall/conversation-search.js";
import { DEFAULT_RECALL_MAX_TOKENS, DEFAULT_RECALL_RESULTS, formatSearchOutcome } from "../../lib/recall/search-conversation-tool.js";
import type { ToolDefinition } from "../../lib/tools/tool.js";
import { ToolError } from "../../lib/errors.js";
import { DEFAULT_SYSTEM_PROMPT } from "../../lib/agent/system-prompt.js";
import { recallTerms } from "../../lib/recall/recall-terms.js";
import type { Evidence, ToolCallSpec } from "./case-schema.js";
import { evidenceIn } from "./evidence.js";
import type { Policy } from "./policies.js";
import { SUITE_OWNER, type LoadedCase, type SuiteTurn } from "./suite.js";

/** Best first; a case is as good as its worst unit. */
export const REACH_CLASSES = ["in-view", "handle", "cued-search", "uncued-search", "missing"] as const;
export type Reached = (typeof REACH_CLASSES)[number];
/** The first three classes: what the view holds or names. */
export const SUFFICIENT: ReadonlySet<Reached> = new Set(["in-view", "handle", "cued-search"]);

export interface CaseMeasure {
  caseId: string;
  kind: LoadedCase["case"]["kind"];
  finishedTurns: number;
  tokens: number;
  /** The case's worst unit. */
  reached: Reached;
  /** A corrected fact shown (in the view, or by the follow-up's search) without its correction. */
  stale: boolean;
  units: {
    id: string;
    reached: Reached;
    via?: "search_conversation" | "read_tool_output" | "read_file";
    /** In view, but only through another turn's text (a kept turn naming the same month): the view does not carry it from its source. */
    byLuck?: true;
  }[];
}

/**
 * Whether a unit the view holds is there from the turn it came from: in the message after that
 * turn's question (its answer and digest), in the question itself, or in the system part's ledger
 * line for that turn (`- turn N: …`, numbered from 1). A unit of the active turn always is.
 */
export function directFromSource(messages: readonly BaseMessage[], thread: readonly BaseMessage[], e: Evidence): boolean {
  if (e.turn === "active") return true;
  const questions = thread.filter((m) => m.type === "human");
  const question = questions[e.turn] && messageText(questions[e.turn].content);
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    if (m.type === "system") {
      const line = `- turn ${e.turn + 1}: `;
      if (
        messageText(m.content)
          .split("\n")
          .some((l) => l.startsWith(line) && evidenceIn(e, l))
      )
        return true;
    } else if (m.type === "human" && messageText(m.content) === question) {
      if (evidenceIn(e, question) || (messages[i + 1] && evidenceIn(e, viewText([messages[i + 1]])))) return true;
    }
  }
  return false;
}

export interface MeasureDeps {
  search: ConversationSearch;
  /** Unused: each case reads its outputs with its own `LoadedCase.readToolOutput`. */
  readToolOutput?: ToolDefinition;
}

/** All the text the model is sent: message contents and the tool calls' names and arguments. */
export function viewText(messages: readonly BaseMessage[]): string {
  const parts: string[] = [];
  for (const m of messages) {
    parts.push(messageText(m.content));
    if (m.type === "ai") for (const call of (m as AIMessage).tool_calls ?? []) parts.push(`${call.name} ${JSON.stringify(call.args)}`);
  }
  return parts.join("\n");
}

const HANDLE = /art_[0-9a-f]{24}/g;
const FILE = /\/large_tool_results\/[\w-]+/g;

async function readHandle(readToolOutput: ToolDefinition, conversationId: string, handle: string, e: Evidence): Promise<boolean> {
  for (const needle of [e.text, ...(e.alternatives ?? [])]) {
    try {
      const output = await readToolOutput.run(
        { handle, search: needle.slice(0, 200) },
        { conversationId, turnId: "measure", toolCallId: "measure", caller: { principal: SUITE_OWNER, roles: [] }, mayUse: () => true },
      );
      // The answer's first line repeats the search text: only the lines after it are the output's.
      if (evidenceIn(e, output.split("\n").slice(1).join("\n"))) return true;
    } catch (error) {
      if (!(error instanceof ToolError)) throw error;
    }
  }
  return false;
}

/** The text of the turn a unit is from: question, answer, each call's arguments and whole output. */
function turnText(turn: SuiteTurn | undefined): string {
  if (!turn) return "";
  const calls = turn.steps.flat() as ToolCallSpec[];
  return [turn.question, turn.answer, ...calls.map((c) => `${c.name} ${JSON.stringify(c.args)}\n${c.output}`)].join("\n");
}

/** What the view says beside the system prompt: the out-of-sight notice and the ledgers. */
export function cueText(messages: readonly BaseMessage[]): string {
  const first = messages[0];
  if (first?.type !== "system") return "";
  const text = messageText(first.content);
  return text.startsWith(DEFAULT_SYSTEM_PROMPT) ? text.slice(DEFAULT_SYSTEM_PROMPT.length) : text;
}

/** Whether the view's cues name the subject of a search for this unit: a term of the cues that the follow-up and the unit's turn share. */
export function cues(cue: string, followUp: string, source: string): boolean {
  if (cue.trim().length === 0) return false;
  const named = new Set(recallTerms(cue));
  const asked = new Set(recallTerms(followUp).filter((t) => named.has(t)));
  if (asked.size === 0) return false;
  return recallTerms(source).some((t) => asked.has(t));
}

export async function measureCase(loaded: LoadedCase, policy: Policy, deps: MeasureDeps): Promise<CaseMeasure> {
  const { messages, reach } = await policy.apply({ thread: loaded.thread, rawThread: loaded.rawThread });
  const text = viewText(messages);
  const cue = cueText(messages);
  let searchedText: string | undefined;
  const searched = async () => {
    if (searchedText === undefined) {
      const query = loaded.case.followUp;
      const outcome = await deps.search.search({
        conversationId: loaded.conversationId,
        query,
        limit: DEFAULT_RECALL_RESULTS,
        // As the product's `search_conversation` asks (`lib/app.ts`): every finished turn, the view's window marked.
        view: { finishedTurns: DEFAULT_VIEW_FINISHED_TURNS, historyBlockTurns: DEFAULT_VIEW_HISTORY_BLOCK_TURNS },
      });
      searchedText = formatSearchOutcome(query, outcome, DEFAULT_RECALL_MAX_TOKENS);
    }
    return searchedText;
  };
  const units: CaseMeasure["units"] = [];
  let stale = false;
  for (const e of loaded.case.evidence) {
    if (e.supersedes) {
      const old: Evidence = { id: `${e.id}-stale`, source: e.source, turn: e.turn, text: e.supersedes };
      if (evidenceIn(old, text) && !evidenceIn(e, text)) stale = true;
      if (reach.search) {
        const found = await searched();
        if (evidenceIn(old, found) && !evidenceIn(e, found)) stale = true;
      }
    }
    if (evidenceIn(e, text)) {
      units.push(directFromSource(messages, loaded.thread, e) ? { id: e.id, reached: "in-view" } : { id: e.id, reached: "in-view", byLuck: true });
      continue;
    }
    let via: CaseMeasure["units"][number]["via"];
    if (reach.readToolOutput) {
      for (const handle of new Set(text.match(HANDLE) ?? [])) {
        if (await readHandle(loaded.readToolOutput, loaded.conversationId, handle, e)) {
          via = "read_tool_output";
          break;
        }
      }
    }
    if (!via && reach.files) {
      for (const path of new Set(text.match(FILE) ?? [])) {
        const content = reach.files.get(path);
        if (content !== undefined && evidenceIn(e, content)) {
          via = "read_file";
          break;
        }
      }
    }
    if (via) {
      units.push({ id: e.id, reached: "handle", via });
      continue;
    }
    if (reach.search && evidenceIn(e, await searched())) {
      const source = e.turn === "active" ? "" : turnText(loaded.turns[e.turn]);
      units.push({ id: e.id, reached: cues(cue, loaded.case.followUp, source) ? "cued-search" : "uncued-search", via: "search_conversation" });
      continue;
    }
    units.push({ id: e.id, reached: "missing" });
  }
  const reached = REACH_CLASSES[Math.max(...units.map((u) => REACH_CLASSES.indexOf(u.reached)))];
  return { caseId: loaded.case.id, kind: loaded.case.kind, finishedTurns: loaded.finishedTurns, tokens: countMessagesTokens(messages), reached, stale, units };
}
