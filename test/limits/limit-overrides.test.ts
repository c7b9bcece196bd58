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

  describe("its cache", () => {
    const scope = (subject: string): LimitScope => ({ kind: "user", issuer: "api", tenant: "acme", subject });

    it("keeps at most maxEntries scopes, dropping the least recently read, and still answers for the dropped ones", async () => {
      let clock = 0;
      const overrides = new LimitOverrides(database.db, { cacheMs: 60_000, maxEntries: 3, now: () => clock });
      await overrides.set(scope("kept"), { tokensPerDay: 9 }, "root");
      for (let i = 0; i < 50; i++) {
        clock += 1;
        expect(await overrides.forScopes([scope(`u${i}`), scope("kept")])).toEqual([undefined, { tokensPerDay: 9 }]);
        expect(overrides.cachedScopes).toBeLessThanOrEqual(3);
      }
      expect(await overrides.forScopes([scope("u0")])).toEqual([undefined]);
    });

    it("drops an entry older than cacheMs when it is met, and keeps nothing when cacheMs is 0", async () => {
      let clock = 0;
      const overrides = new LimitOverrides(database.db, { cacheMs: 1_000, now: () => clock });
      await overrides.forScopes([scope("a"), scope("b")]);
      expect(overrides.cachedScopes).toBe(2);
      clock += 1_000;
      await overrides.forScopes([scope("a")]);
      expect(overrides.cachedScopes).toBe(2);
      const uncached = new LimitOverrides(database.db, { cacheMs: 0 });
      await uncached.set(scope("c"), { tokensPerDay: 1 }, "root");
      expect(await uncached.forScopes([scope("c"), scope("d")])).toEqual([{ tokensPerDay: 1 }, undefined]);
      expect(uncached.cachedScopes).toBe(0);
    });
  });
});
