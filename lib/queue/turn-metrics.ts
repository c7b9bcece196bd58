import type { TurnResult } from "../agent/turn-runner.js";
import type { TurnDocument } from "../store/turn-store.js";

/** CloudWatch namespace of the per-turn metrics; the stack's dashboard reads it. */
export const TURN_METRICS_NAMESPACE = "Threadwise";

/** Metric name of each per-turn figure, as published and as graphed on the dashboard. */
export const TURN_METRIC_NAMES = {
  stateTokens: "StateTokens",
  viewTokens: "ViewTokens",
  inputTokens: "InputTokens",
  outputTokens: "OutputTokens",
  cacheReadTokens: "CacheReadInputTokens",
  cacheWriteTokens: "CacheWriteInputTokens",
  costUsd: "CostUsd",
  toolCalls: "ToolCalls",
  turnDurationMs: "TurnDurationMs",
  omittedOutputs: "OmittedOutputs",
} as const;

/** The per-turn figures published as CloudWatch metrics (namespace Threadwise). Numbers only. */
export interface TurnMetrics {
  stateTokens: number;
  viewTokens: number;
  /** Every input token, cache reads and writes included. */
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /** Absent when the model has no configured price. */
  costUsd?: number;
  toolCalls: number;
  turnDurationMs: number;
  omittedOutputs: number;
}

/** Called once for each turn that finished in this process (not for a retry that found it done). */
export type TurnMetricsSink = (metrics: TurnMetrics) => void;

export function turnMetricsOf(result: TurnResult, turn: TurnDocument | null): TurnMetrics {
  const { usage } = result;
  return {
    stateTokens: result.context.stateTokens,
    viewTokens: result.context.viewTokens,
    inputTokens: usage.inputTokens,
    outputTokens: usage.outputTokens,
    cacheReadTokens: usage.cacheReadTokens ?? 0,
    cacheWriteTokens: usage.cacheWriteTokens ?? 0,
    ...(usage.costUsd !== undefined && { costUsd: usage.costUsd }),
    toolCalls: turn?.toolCalls ?? 0,
    turnDurationMs: turn?.durationMs ?? 0,
    omittedOutputs: result.context.omittedOutputs,
  };
}
