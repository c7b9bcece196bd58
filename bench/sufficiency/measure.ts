/**
 * The measure: for one case and one policy, whether each evidence unit is in the view (direct), one
 * tool call away with what the view holds (a `read_tool_output` handle whose content has it, or a
 * `search_conversation` query formed from the follow-up that returns it; both run for real, on the
 * case's conversation in the stores), or missing; and the view's tokens (the product's counter).
 */
import type { AIMessage, BaseMessage } from "@langchain/core/messages";
import { DEFAULT_VIEW_FINISHED_TURNS } from "../../lib/config/config.js";
import { countMessagesTokens, messageText } from "../../lib/model-view/index.js";
import type { ConversationSearch } from "../../lib/recall/conversation-search.js";
import { DEFAULT_RECALL_MAX_TOKENS, DEFAULT_RECALL_RESULTS, formatSearchOutcome } from "../../lib/recall/search-conversation-tool.js";
import type { ToolDefinition } from "../../lib/tools/tool.js";
import { ToolError } from "../../lib/errors.js";
import type { Evidence } from "./case-schema.js";
import { evidenceIn } from "./evidence.js";
import type { Policy } from "./policies.js";
import { SUITE_OWNER, type LoadedCase } from "./suite.js";

export type Reached = "direct" | "one-call" | "missing";

export interface CaseMeasure {
  caseId: string;
  kind: LoadedCase["case"]["kind"];
  finishedTurns: number;
  tokens: number;
  /** The case's worst unit. */
  reached: Reached;
  units: {
    id: string;
    reached: Reached;
    via?: "search_conversation" | "read_tool_output" | "read_file";
    /** Direct, but only through another turn's text (a kept turn naming the same month): the view does not carry it from its source. */
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
  readToolOutput: ToolDefinition;
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

async function readHandle(deps: MeasureDeps, conversationId: string, handle: string, e: Evidence): Promise<boolean> {
  for (const needle of [e.text, ...(e.alternatives ?? [])]) {
    try {
      const output = await deps.readToolOutput.run(
        { handle, search: needle.slice(0, 200) },
        { conversationId, turnId: "measure", toolCallId: "measure", caller: { principal: SUITE_OWNER, roles: [] }, mayUse: () => true },
      );
      if (evidenceIn(e, output)) return true;
    } catch (error) {
      if (!(error instanceof ToolError)) throw error;
    }
  }
  return false;
}

export async function measureCase(loaded: LoadedCase, policy: Policy, deps: MeasureDeps): Promise<CaseMeasure> {
  const { messages, reach } = await policy.apply({ thread: loaded.thread, rawThread: loaded.rawThread });
  const text = viewText(messages);
  let searched: string | undefined;
  const units: CaseMeasure["units"] = [];
  for (const e of loaded.case.evidence) {
    if (evidenceIn(e, text)) {
      units.push(directFromSource(messages, loaded.thread, e) ? { id: e.id, reached: "direct" } : { id: e.id, reached: "direct", byLuck: true });
      continue;
    }
    let via: CaseMeasure["units"][number]["via"];
    if (reach.readToolOutput) {
      for (const handle of new Set(text.match(HANDLE) ?? [])) {
        if (await readHandle(deps, loaded.conversationId, handle, e)) {
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
    if (!via && reach.search) {
      if (searched === undefined) {
        const query = loaded.case.followUp;
        const outcome = await deps.search.search({
          conversationId: loaded.conversationId,
          query,
          limit: DEFAULT_RECALL_RESULTS,
          visibleTurns: DEFAULT_VIEW_FINISHED_TURNS,
        });
        searched = formatSearchOutcome(query, outcome, DEFAULT_RECALL_MAX_TOKENS);
      }
      if (evidenceIn(e, searched)) via = "search_conversation";
    }
    units.push(via ? { id: e.id, reached: "one-call", via } : { id: e.id, reached: "missing" });
  }
  const reached: Reached = units.some((u) => u.reached === "missing") ? "missing" : units.some((u) => u.reached === "one-call") ? "one-call" : "direct";
  return { caseId: loaded.case.id, kind: loaded.case.kind, finishedTurns: loaded.finishedTurns, tokens: countMessagesTokens(messages), reached, units };
}
