import { describe, expect, it } from "vitest";
import type { LimitScope } from "../../lib/limits/limit-scope.js";
import { effectiveLimits, LimitOverrides } from "../../lib/limits/limit-overrides.js";
import { useTestDatabase } from "../support/store-fixture.js";

const database = useTestDatabase("limit_overrides");
const user: LimitScope = { kind: "user", issuer: "api", tenant: "acme", subject: "ada" };

describe("effectiveLimits", () => {
  it("returns the scope's own value over the default, null for a removed limit, the default where it sets none", () => {
    expect(effectiveLimits({ tokensPerDay: 100, usdPerMonth: 5 }, { tokensPerDay: 7, usdPerMonth: null })).toEqual({
      turnsPerMinute: null,
      concurrentTurns: null,
      concurrentStreams: null,
      tokensPerDay: 7,
      usdPerMonth: null,
    });
  });
});

describe("LimitOverrides", () => {
  describe("forScopes", () => {
    it("returns a change made elsewhere once its cache period has passed, and not before", async () => {
      let clock = 0;
      const reader = new LimitOverrides(database.db, { cacheMs: 30_000, now: () => clock });
      const writer = new LimitOverrides(database.db, { cacheMs: 30_000 });
      expect(await reader.forScopes([user])).toEqual([undefined]);
      await writer.set(user, { tokensPerDay: 5 }, "root");
      clock += 29_000;
      expect(await reader.forScopes([user])).toEqual([undefined]);
      clock += 1_000;
      expect(await reader.forScopes([user])).toEqual([{ tokensPerDay: 5 }]);
    });
  });
});
