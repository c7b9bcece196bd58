import { PromptCache, TTL_MS, type PrefixPoint } from "./prompt-cache.js";

const MODEL = "us.anthropic.claude-sonnet-4-20250514-v1:0";

function clock(start = 1_000_000) {
  const time = { now: start };
  return { time, now: () => time.now };
}

const point = (tokens: number, key: string, ttl: PrefixPoint["ttl"] = "5m"): PrefixPoint => ({ tokens, key, ttl });

describe("PromptCache", () => {
  describe("use", () => {
    it("writes every prefix of a first request up to its last point", () => {
      const cache = new PromptCache({ minTokensPerCheckpoint: 100 });
      expect(cache.use(MODEL, [point(150, "a"), point(400, "b")])).toEqual({
        cacheReadInputTokens: 0,
        cacheWriteInputTokens: 400,
        cacheDetails: [{ ttl: "5m", inputTokens: 400 }],
      });
    });

    it("reads the longest cached prefix and writes only the points after it", () => {
      const cache = new PromptCache({ minTokensPerCheckpoint: 100 });
      cache.use(MODEL, [point(150, "a"), point(400, "b")]);
      expect(cache.use(MODEL, [point(150, "a"), point(400, "b"), point(700, "c")])).toMatchObject({ cacheReadInputTokens: 400, cacheWriteInputTokens: 300 });
      expect(cache.use(MODEL, [point(150, "a"), point(400, "b"), point(700, "c")])).toMatchObject({
        cacheReadInputTokens: 700,
        cacheWriteInputTokens: 0,
        cacheDetails: [],
      });
    });

    it("misses a prefix whose content changed, even at the same length", () => {
      const cache = new PromptCache({ minTokensPerCheckpoint: 100 });
      cache.use(MODEL, [point(400, "b")]);
      expect(cache.use(MODEL, [point(400, "b-changed")])).toMatchObject({ cacheReadInputTokens: 0, cacheWriteInputTokens: 400 });
    });

    it("caches no point less than the minimum after the previous cached one", () => {
      const cache = new PromptCache({ minTokensPerCheckpoint: 1_024 });
      // 1,000 is under the minimum; 1,500 is 1,500 from the start; 2,000 is only 500 after 1,500.
      expect(cache.use(MODEL, [point(1_000, "a"), point(1_500, "b"), point(2_000, "c")])).toMatchObject({ cacheWriteInputTokens: 1_500 });
      expect(cache.use(MODEL, [point(1_000, "a")])).toMatchObject({ cacheReadInputTokens: 0, cacheWriteInputTokens: 0 });
      expect(cache.use(MODEL, [point(1_500, "b"), point(2_000, "c")])).toMatchObject({ cacheReadInputTokens: 1_500, cacheWriteInputTokens: 0 });
    });

    it("expires an entry its TTL after it was last used, and a read starts the TTL again", () => {
      const { time, now } = clock();
      const cache = new PromptCache({ minTokensPerCheckpoint: 100, now });
      cache.use(MODEL, [point(400, "b")]);
      time.now += TTL_MS["5m"] - 1;
      expect(cache.use(MODEL, [point(400, "b")]).cacheReadInputTokens).toBe(400);
      time.now += TTL_MS["5m"] - 1;
      expect(cache.use(MODEL, [point(400, "b")]).cacheReadInputTokens).toBe(400);
      time.now += TTL_MS["5m"];
      expect(cache.use(MODEL, [point(400, "b")])).toMatchObject({ cacheReadInputTokens: 0, cacheWriteInputTokens: 400 });
    });

    it("keeps a one-hour entry past five minutes and reports its writes under its TTL", () => {
      const { time, now } = clock();
      const cache = new PromptCache({ minTokensPerCheckpoint: 100, now });
      expect(cache.use(MODEL, [point(400, "b", "1h"), point(600, "c", "5m")]).cacheDetails).toEqual([
        { ttl: "1h", inputTokens: 400 },
        { ttl: "5m", inputTokens: 200 },
      ]);
      time.now += TTL_MS["5m"] + 1;
      expect(cache.use(MODEL, [point(400, "b", "1h"), point(600, "c", "5m")])).toMatchObject({ cacheReadInputTokens: 400, cacheWriteInputTokens: 200 });
    });

    it("reads a prefix an earlier request cached at a block boundary within the look-back before a point", () => {
      const cache = new PromptCache({ minTokensPerCheckpoint: 100 });
      cache.use(MODEL, [point(400, "b")]);
      const later = {
        ...point(700, "c"),
        earlier: [
          { tokens: 650, key: "x" },
          { tokens: 400, key: "b" },
        ],
      };
      expect(cache.use(MODEL, [later])).toMatchObject({ cacheReadInputTokens: 400, cacheWriteInputTokens: 300 });
      const beyond = new PromptCache({ minTokensPerCheckpoint: 100, lookbackBlocks: 1 });
      beyond.use(MODEL, [point(400, "b")]);
      expect(beyond.use(MODEL, [later])).toMatchObject({ cacheReadInputTokens: 0, cacheWriteInputTokens: 700 });
    });

    it("keeps each model's cache apart", () => {
      const cache = new PromptCache({ minTokensPerCheckpoint: 100 });
      cache.use(MODEL, [point(400, "b")]);
      expect(cache.use("another-model", [point(400, "b")]).cacheReadInputTokens).toBe(0);
    });
  });
});
