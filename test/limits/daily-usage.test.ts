import { describe, expect, it } from "vitest";
import { DailyUsage, USAGE_DAILY_COLLECTION, USAGE_RETENTION_DAYS } from "../../lib/limits/daily-usage.js";
import type { LimitScope } from "../../lib/limits/limit-scope.js";
import { useTestDatabase } from "../support/store-fixture.js";

const database = useTestDatabase("daily_usage");

const ada: LimitScope = { kind: "user", issuer: "api", tenant: "acme", subject: "ada" };
const bob: LimitScope = { kind: "user", issuer: "api", tenant: "acme", subject: "bob" };
const call = { inputTokens: 1_000, outputTokens: 200, cacheReadTokens: 50, cacheWriteTokens: 10 };

describe("DailyUsage", () => {
  describe("record", () => {
    it("adds each call to its scope's UTC day, counting a turn at its first call, kept USAGE_RETENTION_DAYS days", async () => {
      let now = new Date("2030-03-01T23:59:00Z");
      const usage = new DailyUsage(database.db, () => now);
      await usage.setup();
      await usage.record(ada, { tokens: 1_200, micros: 30 }, { ...call, firstCall: true });
      await usage.record(ada, { tokens: 800, micros: 20 }, { ...call, firstCall: false });
      now = new Date("2030-03-02T00:01:00Z");
      await usage.record(ada, { tokens: 500, micros: 1_000_000 }, { ...call, firstCall: true });
      await usage.record(bob, { tokens: 9, micros: 9 }, { ...call, firstCall: true });

      expect(await usage.usage(ada, "2030-03-01", "2030-03-02")).toEqual([
        {
          day: "2030-03-01",
          turns: 1,
          modelCalls: 2,
          inputTokens: 2_000,
          outputTokens: 400,
          cacheReadTokens: 100,
          cacheWriteTokens: 20,
          weightedTokens: 2_000,
          costUsd: 0.00005,
        },
        {
          day: "2030-03-02",
          turns: 1,
          modelCalls: 1,
          inputTokens: 1_000,
          outputTokens: 200,
          cacheReadTokens: 50,
          cacheWriteTokens: 10,
          weightedTokens: 500,
          costUsd: 1,
        },
      ]);
      const stored = await database.db.collection(USAGE_DAILY_COLLECTION).findOne({ day: "20300302", modelCalls: 1, weightedTokens: 500 });
      expect(stored?.expireAt).toEqual(new Date(now.getTime() + USAGE_RETENTION_DAYS * 86_400_000));
    });
  });

  describe("usage", () => {
    it("returns only the days asked, oldest first, and nothing of another scope", async () => {
      const now = new Date("2031-05-10T10:00:00Z");
      const usage = new DailyUsage(database.db, () => now);
      await usage.record(ada, { tokens: 1, micros: 1 }, { ...call, firstCall: true });
      expect(await usage.usage(ada, "2031-05-11", "2031-05-20")).toEqual([]);
      expect((await usage.usage(bob, "2031-05-10", "2031-05-10")).length).toBe(0);
      expect((await usage.usage(ada, "2031-05-01", "2031-05-10")).map((d) => d.day)).toEqual(["2031-05-10"]);
    });
  });
});
