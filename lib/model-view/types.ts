import type { BaseMessage } from "@langchain/core/messages";

/** What the model view may keep. Every field has a documented default in `lib/config`. */
export interface ModelViewPolicy {
  systemPrompt: string;
  /** Finished turns kept as (question, final answer) pairs. */
  finishedTurns: number;
  /** A tool output above this many tokens is replaced in the view by a notice. */
  toolOutputTokens: number;
  /** Hard ceiling on the view's tokens. */
  totalBudget: number;
  /** Tokens taken by the tool schemas sent beside the messages; counted against the budget. */
  toolSchemaTokens?: number;
}

export interface OmittedOutput {
  toolCallId: string;
  toolName: string;
  tokens: number;
  handle?: string;
  reason: "over-threshold" | "over-budget";
}

export interface ModelViewStats {
  stateMessages: number;
  stateTokens: number;
  viewMessages: number;
  viewTokens: number;
  finishedTurnsInState: number;
  finishedTurnsKept: number;
  omittedOutputs: OmittedOutput[];
  budget: number;
  buildMs: number;
}

export interface ModelView {
  messages: BaseMessage[];
  stats: ModelViewStats;
}
