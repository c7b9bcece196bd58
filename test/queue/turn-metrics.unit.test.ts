import { describe, expect, it } from "vitest";
import type { TurnResult } from "../../lib/agent/turn-runner.js";
import { TURN_METRIC_NAMES, turnMetricsOf } from "../../lib/queue/turn-metrics.js";
import type { TurnDocument } from "../../lib/store/turn-store.js";

const result: TurnResult = {
  turnId: "t1",
  status: "completed",
  answer: "ok",
  usage: { inputTokens: 1_200, outputTokens: 80, totalTokens: 1_280, cacheReadTokens: 900, cacheWriteTokens: 100, costUsd: 0.0042 },
  context: { modelCalls: 2, stateTokens: 5_000, viewTokens: 1_100, budget: 8_000, finishedTurnsKept: 4, omittedOutputs: 1 },
};

describe("turnMetricsOf", () => {
  it("returns the turn's figures: tokens of state, view and usage, cost, tool calls, duration and omitted outputs", () => {
    expect(turnMetricsOf(result, { toolCalls: 3, durationMs: 2_500 } as TurnDocument)).toEqual({
      stateTokens: 5_000,
      viewTokens: 1_100,
      inputTokens: 1_200,
      outputTokens: 80,
      cacheReadTokens: 900,
      cacheWriteTokens: 100,
      costUsd: 0.0042,
      toolCalls: 3,
      turnDurationMs: 2_500,
      omittedOutputs: 1,
    });
  });

  it("returns zeros for what a usage or a missing turn record leaves out, and no cost without a price", () => {
    const bare = { ...result, usage: { inputTokens: 10, outputTokens: 1, totalTokens: 11 } };
    const metrics = turnMetricsOf(bare, null);
    expect(metrics).toMatchObject({ cacheReadTokens: 0, cacheWriteTokens: 0, toolCalls: 0, turnDurationMs: 0 });
    expect(metrics).not.toHaveProperty("costUsd");
  });

  it("names a metric for every figure", () => {
    expect(Object.keys(TURN_METRIC_NAMES).sort()).toEqual(Object.keys(turnMetricsOf(result, null)).sort());
  });
});
