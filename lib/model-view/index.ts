export {
  buildModelView,
  DEFAULT_HISTORY_BLOCK_TURNS,
  DEFAULT_TOOL_SCHEMA_TOKENS,
  EXACT_TOKEN_ESTIMATE,
  EMPTY_TOOL_OUTPUT,
  EMPTY_USER_MESSAGE,
  firstKeptTurn,
  INTERRUPTED_TOOL_RESULT,
  NO_ANSWER_STUB,
} from "./build-model-view.js";
export type { ModelViewHistory } from "./build-model-view.js";
export { messageText } from "./message-text.js";
export { isCachePointBlock, MAX_CACHE_POINTS, placeCachePoints, withCachePoints } from "./cache-points.js";
export type { CacheLayout, CachePointBlock } from "./cache-points.js";
export {
  countMessagesTokens,
  countMessageTokens,
  countStateTokens,
  countTextTokens,
  MESSAGE_OVERHEAD_TOKENS,
  stampTokenCount,
  TOKEN_COUNT_KEY,
} from "./token-counter.js";
export {
  DEFAULT_CALIBRATION_WINDOW,
  DEFAULT_INITIAL_TOKEN_MARGIN,
  DEFAULT_MIN_TOKEN_MARGIN,
  estimateError,
  TokenCalibration,
} from "./token-calibration.js";
export type { TokenCalibrationOptions } from "./token-calibration.js";
export { offloadedArtifact, storedArtifact, toolOutputArtifactSchema } from "./tool-output-artifact.js";
export type { ToolOutputArtifact } from "./tool-output-artifact.js";
export { DEFAULT_NOTICE_PREVIEW_CHARS, READ_TOOL_OUTPUT_TOOL, toolOutputNotice } from "./tool-output-notice.js";
export type { ToolOutputNoticeInput } from "./tool-output-notice.js";
export {
  boundedLedger,
  DEFAULT_PARAMETER_LEDGER,
  isTimeAnchor,
  ledgerAfterTurn,
  ledgerAfterTurns,
  ledgerText,
  PARAMETER_LEDGER_HEADING,
} from "./parameter-ledger.js";
export { callFilters, callParameters, DEFAULT_TURN_DIGEST, DIGEST_WHOLE_OUTPUT_TOKENS, TURN_DIGEST_HEADING, turnDigest } from "./turn-digest.js";
export {
  DEFAULT_OUT_OF_SIGHT_STEP_TURNS,
  EMPTY_OUT_OF_SIGHT_SUMMARY,
  namesIn,
  OUT_OF_SIGHT_NAMES,
  outOfSightNotice,
  summaryAfterTurn,
  summaryAfterTurns,
} from "./out-of-sight-notice.js";
export type { OutOfSightPolicy } from "./out-of-sight-notice.js";
export { CONVERSE_RULES, type ConverseRule } from "./converse-rules.js";
export { validateConverseView } from "./validate-view.js";
export type { ValidateConverseViewOptions } from "./validate-view.js";
export type {
  CachePoint,
  CachePointKind,
  CacheTtl,
  LedgerEntry,
  LeftOutReason,
  MessageDisposition,
  MessageRepair,
  ModelView,
  ModelViewPolicy,
  ModelViewStats,
  OmittedOutput,
  ParameterLedgerPolicy,
  OutOfSightSummary,
  StandingEntry,
  StandingLedgerPolicy,
  PromptCachePolicy,
  TokenEstimate,
  TurnDigestPolicy,
  ViewRepairs,
} from "./types.js";
export {
  boundedStanding,
  DEFAULT_STANDING_LEDGER,
  STANDING_LEDGER_HEADING,
  standingAfterTurn,
  standingAfterTurns,
  standingStatement,
  standingText,
  supersedes,
} from "./standing-ledger.js";
