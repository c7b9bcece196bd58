import type { BaseMessage } from "@langchain/core/messages";
import type { Provenance } from "../auth/data-visibility.js";
import type { OutOfSightPolicy } from "./out-of-sight-notice.js";

/** How long Bedrock keeps a cached prefix after its last use: `5m` everywhere, `1h` on recent Claude models (writes cost more). */
export type CacheTtl = "5m" | "1h";

/** Where the view asks Bedrock to cache, and for how long. */
export interface PromptCachePolicy {
  /** The model's tokens a checkpoint must follow the previous one by, or Bedrock does not cache it (1,024 for Claude Sonnet). */
  minTokensPerCheckpoint: number;
  /** TTL of the points after the system prompt and the finished-turn block. Must not be shorter than `turnTtl` (Bedrock's order). */
  stableTtl: CacheTtl;
  /** TTL of the points within the growing part: later questions and the active turn's steps. */
  turnTtl: CacheTtl;
}

/**
 * The model's input tokens for a request of `local` local (cl100k) tokens: `local × ratio + offset`,
 * as `TokenCalibration` learns it, and the safety margin over it. The offset is what the model adds
 * whatever the request's size (Claude's tool-use system prompt, for one).
 */
export interface TokenEstimate {
  ratio: number;
  offset: number;
  /** The budget holds for requests counting up to `(local × ratio + offset) × (1 + margin)` model tokens. */
  margin: number;
}

/**
 * What a kept finished turn shows of its tool exchange, after its final answer, so that a follow-up
 * ("the fourth one", "and for East?", "no, I meant margin") finds what the answer drew on.
 */
export interface TurnDigestPolicy {
  /**
   * Tool outputs are shown (by whole lines, within `outputTokens`) for the last `recentTurns` turns of
   * the history block and for every turn after it, so what is shown changes only when the block moves.
   */
  recentTurns: number;
  /** Most tokens of output a recent turn's digest shows, shared by its outputs (a short one leaves the rest to the others). */
  outputTokens: number;
  /** Most characters of a call's arguments shown when they hold no filter to show instead (`callParameters`). */
  argsChars: number;
}

/** What the model view may keep. Every field has a documented default in `lib/config`. */
export interface ModelViewPolicy {
  /** Sent first; a blank prompt sends no system message (Converse rejects blank text). */
  systemPrompt: string;
  /** Finished turns kept at least as (question, final answer) pairs (budget permitting); up to `finishedTurns + historyBlockTurns - 1`. */
  finishedTurns: number;
  /**
   * The oldest kept finished turn moves this many turns at a time, so the history's beginning (and
   * the cached prefix) changes once every so many turns rather than every turn.
   * Default: `DEFAULT_HISTORY_BLOCK_TURNS` (1: the window moves one pair a turn).
   */
  historyBlockTurns?: number;
  /** Where to put cache points. Default: none. */
  cache?: PromptCachePolicy;
  /** How the model's tokens relate to local counts; `totalBudget` is in the model's tokens. Default: `EXACT_TOKEN_ESTIMATE` (ratio 1, no margin). */
  tokenEstimate?: TokenEstimate;
  /** A tool output above this many tokens is replaced in the view by a notice. */
  toolOutputTokens: number;
  /** Hard ceiling on the view's tokens in the model's tokens (as estimated by `tokenEstimate`, margin included), tool schemas included. */
  totalBudget: number;
  /** Tokens taken by the tool schemas sent beside the messages; counted against the budget. Default: `DEFAULT_TOOL_SCHEMA_TOKENS` (0). */
  toolSchemaTokens?: number;
  /** Finished turns older than `finishedTurns` are counted in a notice after the system prompt (`outOfSightNotice`). Default: no notice. */
  outOfSight?: OutOfSightPolicy;
  /** With it, each kept finished turn's answer is followed by a digest of its tool calls (`turnDigest`). Default: none, exactly (question, final answer). */
  turnDigest?: TurnDigestPolicy;
  /**
   * With it, the system part ends with the time anchors that queries of finished turns before the
   * window resolved (`parameter-ledger.ts`): those archived out of the thread (`ModelViewHistory.parameterLedger`)
   * and those still in it. It changes only when the window's first turn moves. Default: none.
   */
  parameterLedger?: ParameterLedgerPolicy;
  /**
   * With it, the system part then carries the standing statements of finished turns before the window
   * (`standing-ledger.ts`): instructions that govern later answers, facts the user stated about
   * themselves, targets and constraints, newest winning over what it corrects, each with its turn.
   * Those archived out of the thread come from `ModelViewHistory.standingLedger`. It changes only when
   * the window's first turn moves. Default: none.
   */
  standingLedger?: StandingLedgerPolicy;
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

/** What a cache point marks the end of. */
export type CachePointKind = "system" | "history" | "previous" | "end";

/** A cache point of the view: Bedrock caches the request's prefix up to the end of message `after`. */
export interface CachePoint {
  /** Index in the view's messages of the message the point follows. */
  after: number;
  /**
   * `system`: tools and system prompt; `history`: the block of finished turns; `previous`: the longest
   * prefix an earlier call of the thread ended with (and so wrote); `end`: this request, for the next call.
   */
  kind: CachePointKind;
  ttl: CacheTtl;
  /** Local tokens of the prefix it closes, tool schemas included. */
  prefixTokens: number;
}

export interface ModelViewStats {
  stateMessages: number;
  /** Tokens of every stored message, as they are in state (offloaded outputs as their previews). */
  stateTokens: number;
  viewMessages: number;
  /** Tokens of the view's messages, system prompt included, tool schemas excluded. */
  viewTokens: number;
  /** Tokens of the tool schemas; `((viewTokens + toolSchemaTokens) × ratio + offset) × (1 + margin)` never exceeds `budget`. */
  toolSchemaTokens: number;
  /** The estimate the budget was enforced with. */
  tokenEstimate: TokenEstimate;
  /** The model's input tokens expected for this view: `(viewTokens + toolSchemaTokens) × ratio + offset`, margin not included. */
  estimatedInputTokens: number;
  /** At most four (Bedrock's limit), in view order; empty without a cache policy. */
  cachePoints: CachePoint[];
  finishedTurnsInState: number;
  /** Finished turns archived out of the thread before its first message (`ModelViewHistory`); absent when none are. */
  archivedTurns?: number;
  finishedTurnsKept: number;
  /** Finished turns within the kept window that were dropped to fit the budget. */
  finishedTurnsDroppedForBudget: number;
  omittedOutputs: OmittedOutput[];
  repairs: ViewRepairs;
  /** `totalBudget`, in the model's tokens. */
  budget: number;
  buildMs: number;
}

export interface ModelView {
  messages: BaseMessage[];
  stats: ModelViewStats;
  /** One for each stored message, in the stored order: what the view did with it. */
  dispositions: MessageDisposition[];
}

/** Why a stored message is not in the view. */
export type LeftOutReason =
  /** A finished turn older than the kept ones, with no out-of-sight notice to count it. */
  | "outside-window"
  /** A kept finished turn dropped, oldest first, to fit `totalBudget`. */
  | "over-budget"
  /** A finished turn's message other than its question and final answer: tool calls, results, text between them. */
  | "exchange"
  /** A tool result whose call is not in the assistant message before it, or that repeats an answered id. */
  | "orphan-tool-result"
  /** Nothing to send: blank text and no usable tool call. */
  | "blank"
  /** Assistant text left last in the active turn once its unusable tool calls were dropped (the user must speak last). */
  | "trailing-text"
  /** A stored system message: the view sends its own system part. */
  | "system"
  /** A message before the thread's first question. */
  | "before-first-question"
  /** A message type Converse does not take. */
  | "unsupported-type";

/** How a message sent in the view differs from the stored one. */
export type MessageRepair =
  /** Blank text blocks removed (Converse rejects them). */
  | "blank-text"
  /** No text at all: sent as `EMPTY_USER_MESSAGE` or `EMPTY_TOOL_OUTPUT`. */
  | "empty"
  /** Tool calls without a usable id removed. */
  | "tool-calls"
  /** Merged with the neighbouring assistant message(s) into one (Converse needs alternating roles). */
  | "merged";

/**
 * What became of one stored message in one view; `viewIndex` is where the view holds it.
 * - `sent`: the view holds this very message object;
 * - `repaired`: sent, changed as `repair` says (merged messages share one view message);
 * - `condensed`: a kept finished turn's question, or the text of its final answer;
 * - `notice` `tool-output`: a tool result replaced by its notice (over the threshold, offloaded, or to fit the budget);
 * - `notice` `out-of-sight`: a finished turn out of the window, counted by the out-of-sight notice of the system part;
 * - `left-out`: not in the view, for `reason`.
 *
 * `turn` is the index of the turn the message belongs to (oldest 0; a turn starts at a user message), absent before the first question.
 */
export type MessageDisposition = { turn?: number } & (
  | { fate: "sent"; viewIndex: number }
  | { fate: "repaired"; viewIndex: number; repair: MessageRepair }
  | { fate: "condensed"; viewIndex: number; part: "question" | "answer" }
  | { fate: "notice"; notice: "tool-output"; viewIndex: number; reason: OmittedOutput["reason"]; handle?: string }
  | { fate: "notice"; notice: "out-of-sight"; viewIndex: number }
  | { fate: "left-out"; reason: LeftOutReason }
);

/**
 * A time anchor a finished turn's query resolved ("last month" → `month = '2026-10'`), kept after the
 * turn leaves the view's window, with the turn (numbered from the conversation's first, 1) that last set it.
 */
export interface LedgerEntry {
  turn: number;
  filter: string;
  /**
   * What a viewer needs to see the filter: the provenance of the outputs its calls fetched
   * (`lib/auth/data-visibility.ts`); absent for a filter set by calls stored without provenance.
   */
  provenance?: Provenance;
}

/** How much of the resolved time anchors of turns out of sight the view's system part carries. */
export interface ParameterLedgerPolicy {
  /** Distinct anchors kept, the most recently set. */
  entries: number;
  /** Most tokens the ledger's text may take (heading included); the oldest entries go first. */
  tokens: number;
}

/** A standing statement of a turn out of sight ("From now on, report amounts in EUR."), with its turn (from 1) and the turn it replaces, if any. */
export interface StandingEntry {
  turn: number;
  text: string;
  corrects?: number;
}

/** How many of the standing statements of turns out of sight the view's system part carries. */
export interface StandingLedgerPolicy {
  /** Statements kept, the most recent. */
  entries: number;
  /** Most tokens the ledger's text may take (heading included); the oldest entries go first. */
  tokens: number;
}

export type { OutOfSightSummary } from "./out-of-sight-notice.js";
