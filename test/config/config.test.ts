import { describe, expect, it } from "vitest";
import {
  DEFAULT_MODEL_PRICES,
  DEFAULT_PROMPT_CACHE_MIN_TOKENS,
  DEFAULT_VIEW_HISTORY_BLOCK_TURNS,
  DEFAULT_VIEW_TOKEN_MARGIN,
  DEFAULT_VIEW_TOKEN_MARGIN_MIN,
  loadConfig,
  priceOf,
} from "../../lib/config/config.js";
import { ValidationError } from "../../lib/errors.js";

describe("loadConfig", () => {
  describe("model view and prompt cache", () => {
    it("returns the defaults: history blocks, cache points with Bedrock's default TTL, the token margin", () => {
      const { view, model } = loadConfig({});
      expect(view).toMatchObject({
        historyBlockTurns: DEFAULT_VIEW_HISTORY_BLOCK_TURNS,
        tokenMargin: { initial: DEFAULT_VIEW_TOKEN_MARGIN, min: DEFAULT_VIEW_TOKEN_MARGIN_MIN },
        promptCache: { enabled: true, minTokensPerCheckpoint: DEFAULT_PROMPT_CACHE_MIN_TOKENS, stableTtl: "5m", turnTtl: "5m" },
      });
      expect(model).toMatchObject({ prices: DEFAULT_MODEL_PRICES, countTokens: false });
    });

    it("returns the TTL policy, the margin and CountTokens as set", () => {
      const { view, model } = loadConfig({
        PROMPT_CACHE: "off",
        PROMPT_CACHE_STABLE_TTL: "1h",
        PROMPT_CACHE_TURN_TTL: "5m",
        VIEW_TOKEN_MARGIN: "0.3",
        VIEW_TOKEN_MARGIN_MIN: "0.05",
        BEDROCK_COUNT_TOKENS: "true",
      });
      expect(view.promptCache).toMatchObject({ enabled: false, stableTtl: "1h", turnTtl: "5m" });
      expect(view.tokenMargin).toEqual({ initial: 0.3, min: 0.05 });
      expect(model.countTokens).toBe(true);
    });

    it("throws ValidationError for a one-hour turn TTL after five-minute stable points, which Bedrock rejects", () => {
      expect(() => loadConfig({ PROMPT_CACHE_STABLE_TTL: "5m", PROMPT_CACHE_TURN_TTL: "1h" })).toThrow(ValidationError);
      expect(() => loadConfig({ PROMPT_CACHE_TURN_TTL: "1h" })).toThrow(ValidationError);
    });
  });

  describe("model prices", () => {
    it("returns MODEL_PRICES over the default table", () => {
      const custom = { input: 1, output: 5, cacheRead: 0.1, cacheWrite: 1.25, cacheWrite1h: 2 };
      const { prices } = loadConfig({ MODEL_PRICES: JSON.stringify({ "my.model-v1": custom }) }).model;
      expect(prices["my.model-v1"]).toEqual(custom);
      expect(prices["anthropic.claude-sonnet-4-20250514-v1:0"]).toEqual(DEFAULT_MODEL_PRICES["anthropic.claude-sonnet-4-20250514-v1:0"]);
    });

    it("throws ValidationError for prices that are not JSON or lack a kind of token", () => {
      expect(() => loadConfig({ MODEL_PRICES: "{not json" })).toThrow(ValidationError);
      expect(() => loadConfig({ MODEL_PRICES: JSON.stringify({ m: { input: 1, output: 5 } }) })).toThrow(ValidationError);
      expect(() => loadConfig({ MODEL_PRICES: JSON.stringify({ m: { input: -1, output: 5, cacheRead: 0, cacheWrite: 0, cacheWrite1h: 0 } }) })).toThrow(ValidationError);
    });
  });
});

describe("priceOf", () => {
  it("returns a model's price by its id or by its id without the inference-profile prefix", () => {
    const sonnet = DEFAULT_MODEL_PRICES["anthropic.claude-sonnet-4-20250514-v1:0"];
    expect(priceOf(DEFAULT_MODEL_PRICES, "us.anthropic.claude-sonnet-4-20250514-v1:0")).toBe(sonnet);
    expect(priceOf(DEFAULT_MODEL_PRICES, "eu.anthropic.claude-sonnet-4-20250514-v1:0")).toBe(sonnet);
    expect(priceOf(DEFAULT_MODEL_PRICES, "local")).toBeUndefined();
  });
});
