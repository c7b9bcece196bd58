import { AIMessage } from "@langchain/core/messages";
import { describe, expect, it } from "vitest";
import { costOf, finishReasonsOf, reportedUsage } from "../../lib/agent/model-usage.js";
import type { ModelPrice } from "../../lib/config/model-config.js";

/** Dollars per million tokens, chosen so each kind of token has its own price. */
const PRICE: ModelPrice = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75, cacheWrite1h: 6 };

describe("model usage", () => {
  describe("costOf", () => {
    it("returns uncached input, output, cache reads and writes each at their price", () => {
      const usage = { inputTokens: 1_000_000, outputTokens: 100_000, totalTokens: 1_100_000, cacheReadTokens: 500_000, cacheWriteTokens: 200_000 };
      // 300k uncached × 3 + 100k × 15 + 500k × 0.3 + 200k × 3.75, per million.
      expect(costOf(usage, PRICE)).toBeCloseTo(0.9 + 1.5 + 0.15 + 0.75, 10);
    });

    it("returns the 1-hour writes at their own price, never more of them than were written", () => {
      const usage = { inputTokens: 200_000, outputTokens: 0, totalTokens: 200_000, cacheReadTokens: 0, cacheWriteTokens: 200_000 };
      expect(costOf(usage, PRICE, 50_000)).toBeCloseTo(0.15 * 3.75 + 0.05 * 6, 10);
      expect(costOf(usage, PRICE, 999_999)).toBeCloseTo(0.2 * 6, 10);
    });

    it("returns input at the input price when the usage has no cache fields", () => {
      expect(costOf({ inputTokens: 1_000_000, outputTokens: 0, totalTokens: 1_000_000 }, PRICE)).toBe(3);
    });
  });

  describe("reportedUsage", () => {
    const answer = (fields: Partial<ConstructorParameters<typeof AIMessage>[0] & object> = {}) =>
      new AIMessage({
        content: "ok",
        usage_metadata: {
          input_tokens: 1_000,
          output_tokens: 10,
          total_tokens: 1_010,
          input_token_details: { cache_read: 600, cache_creation: 300 },
        },
        ...fields,
      });

    it("returns the reported tokens, cache reads and writes included, and no cost without a price", () => {
      expect(reportedUsage(answer())).toEqual({ inputTokens: 1_000, outputTokens: 10, totalTokens: 1_010, cacheReadTokens: 600, cacheWriteTokens: 300 });
    });

    it("returns zeros for a message without usage", () => {
      expect(reportedUsage(new AIMessage("ok"))).toEqual({ inputTokens: 0, outputTokens: 0, totalTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 });
    });

    it("returns the cost with the 1-hour writes Bedrock details in the response's cache details", () => {
      const message = answer({
        response_metadata: {
          usage: {
            cacheDetails: [
              { ttl: "1h", inputTokens: 100 },
              { ttl: "5m", inputTokens: 200 },
            ],
          },
        },
      });
      const usage = reportedUsage(message, PRICE);
      expect(usage.costUsd).toBeCloseTo(costOf(usage, PRICE, 100), 12);
      expect(usage.costUsd).not.toBeCloseTo(costOf(usage, PRICE, 0), 12);
    });
  });

  describe("finishReasonsOf", () => {
    it("returns Bedrock's stopReason, as invoked or streamed, an OpenAI finish_reason, or none", () => {
      expect(finishReasonsOf(new AIMessage({ content: "", response_metadata: { stopReason: "tool_use" } }))).toEqual(["tool_use"]);
      expect(finishReasonsOf(new AIMessage({ content: "", response_metadata: { messageStop: { stopReason: "end_turn" } } }))).toEqual(["end_turn"]);
      expect(finishReasonsOf(new AIMessage({ content: "", response_metadata: { finish_reason: "length" } }))).toEqual(["length"]);
      expect(finishReasonsOf(new AIMessage({ content: "" }))).toEqual([]);
    });
  });
});
