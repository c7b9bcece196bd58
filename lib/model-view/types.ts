import type { BaseMessage } from "@langchain/core/messages";
import type { OutOfSightPolicy } from "./out-of-sight-notice.js";

/** What the model view may keep. Every field has a documented default in `lib/config`. */
export interface ModelViewPolicy {
  /** Sent first; a blank prompt sends no system message (Converse rejects blank text). */
  systemPrompt: string;
  /** Finished turns kept as (question, final answer) pairs. */
  finishedTurns: number;
  /** A tool output above this many tokens is replaced in the view by a notice. */
  toolOutputTokens: number;
  /** Hard ceiling on the view's tokens, tool schemas included. */
  totalBudget: number;
  /** Tokens taken by the tool schemas sent beside the messages; counted against the budget. Default: `DEFAULT_TOOL_SCHEMA_TOKENS` (0). */
  toolSchemaTokens?: number;
  /** Finished turns older than `finishedTurns` are counted in a notice after the system prompt (`outOfSightNotice`). Default: no notice. */
  outOfSight?: OutOfSightPolicy;
}

export interface OmittedOutput {
  toolCallId: string;
  toolName: string;
  /** Tokens of the whole output (for an offloaded output, as its artifact reports). */
  tokens: number;
  handle?: string;
  /** `over-threshold`: larger than `toolOutputTokens` (or offloaded); `over-budget`: noticed to fit `totalBudget`. */
  reason: "over-threshold" | "over-budget";
}

/** How many broken-history repairs the view needed; all zero for a well-formed thread. */
export interface ViewRepairs {
  /** Tool calls without a result (an interrupted turn), answered in the view by a synthetic error result. */
  syntheticToolResults: number;
  /** Tool results whose call is not in the assistant message before them (or that repeat an id), left out. */
  orphanToolResults: number;
  /** Tool calls without an id, or repeating an id of the turn (they cannot be paired with a result), left out. */
  droppedToolCalls: number;
  /** Finished turns with no final answer, shown as the question and a marked stub answer. */
  stubbedAnswers: number;
  /** Consecutive same-role messages merged into one (Converse needs alternating roles). */
  mergedMessages: number;
  /** Messages with nothing to send (blank text, no tool calls), or of a type Converse does not take, left out. */
  droppedMessages: number;
}

export interface ModelViewStats {
  stateMessages: number;
  /** Tokens of every stored message, as they are in state (offloaded outputs as their previews). */
  stateTokens: number;
  viewMessages: number;
  /** Tokens of the view's messages, system prompt included, tool schemas excluded. */
  viewTokens: number;
  /** Tokens of the tool schemas; `viewTokens + toolSchemaTokens` never exceeds `budget`. */
  toolSchemaTokens: number;
  finishedTurnsInState: number;
  finishedTurnsKept: number;
  /** Finished turns within `finishedTurns` that were dropped to fit the budget. */
  finishedTurnsDroppedForBudget: number;
  omittedOutputs: OmittedOutput[];
  repairs: ViewRepairs;
  budget: number;
  buildMs: number;
}

export interface ModelView {
  messages: BaseMessage[];
  stats: ModelViewStats;
}
