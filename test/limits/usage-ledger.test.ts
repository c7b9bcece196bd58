import { describe, expect, it } from "vitest";
import { BudgetExhaustedError, RateLimitedError } from "../../lib/errors.js";
import type { LimitName } from "../../lib/config/limits-config.js";
import type { LimitScope } from "../../lib/limits/limit-scope.js";
import type { ScopeLimits } from "../../lib/limits/limit-claims.js";
import { UsageLedger } from "../../lib/limits/usage-ledger.js";
import { useTestDatabase } from "../support/store-fixture.js";

const database = useTestDatabase("usage_ledger");

const user: LimitScope = { kind: "user", issuer: "api", tenant: "acme", subject: "ada" };
const tenant: LimitScope = { kind: "tenant", issuer: "api", tenant: "acme", subject: null };
const none: Record<LimitName, number | null> = { turnsPerMinute: null, concurrentTurns: null, concurrentStreams: null, tokensPerDay: null, usdPerMonth: null };
const limited = (scope: LimitScope, limits: Partial<Record<LimitName, number>>): ScopeLimits => ({ scope, limits: { ...none, ...limits } });

function ledger(now = () => new Date("2030-01-01T12:00:00Z")) {
  return new UsageLedger(database.db, { reservationTtlMs: 60_000, slotTtlMs: 60_000, now });
}

describe("UsageLedger", () => {
  describe("claim", () => {
    it("throws RateLimitedError at the concurrency limit, and admits again once a slot is released", async () => {
      const l = ledger();
      const scopes = [limited(user, { concurrentTurns: 2 })];
      await l.claim(scopes, { turnId: "t1" });
      await l.claim(scopes, { turnId: "t2" });
      await expect(l.claim(scopes, { turnId: "t3" })).rejects.toMatchObject({ name: "RateLimitedError", limit: "user.concurrentTurns" });
      await l.release([user], "active", "t1");
      await expect(l.claim(scopes, { turnId: "t3" })).resolves.toBeUndefined();
    });

    it("returns at once for a turn already admitted, counting it once", async () => {
      const l = ledger();
      const scopes = [limited(user, { turnsPerMinute: 5 })];
      await l.claim(scopes, { turnId: "t1" });
      await l.claim(scopes, { turnId: "t1" });
      expect((await l.current(user)).turnsThisMinute).toBe(1);
    });

    it("returns no reservation for a turn admitted again after its first call settled (a retried request), and counts it once", async () => {
      const l = ledger();
      const scopes = [limited(user, { turnsPerMinute: 5 })];
      const claim = { turnId: "t9", reservation: { id: "t9~0", amount: { tokens: 100, micros: 0 } } };
      const held = await l.claim(scopes, claim);
      if (!held) throw new Error("no reservation");
      await l.settle(held, { tokens: 40, micros: 0 });
      await expect(l.claim(scopes, claim)).resolves.toBeUndefined();
      expect(await l.current(user)).toMatchObject({ turnsThisMinute: 1, concurrentTurns: 1, tokensToday: 40 });
    });

    it("changes no scope when one of them refuses: the tenant's refusal gives the user's claim back", async () => {
      const l = ledger();
      const amount = { tokens: 600, micros: 0 };
      await l.claim([limited(tenant, {})], { reservation: { id: "other~0", amount: { tokens: 900, micros: 0 } } });
      const scopes = [limited(user, { tokensPerDay: 10_000 }), limited(tenant, { tokensPerDay: 1_000 })];
      const refusal = await l.claim(scopes, { reservation: { id: "r~0", amount } }).catch((e: unknown) => e);
      expect(refusal).toBeInstanceOf(BudgetExhaustedError);
      expect(refusal).toMatchObject({ limit: "tenant.tokensPerDay", resetsAt: new Date("2030-01-02T00:00:00Z") });
      expect((await l.current(user)).tokensToday).toBe(0);
      expect((await l.current(tenant)).tokensToday).toBe(900);
    });

    it("frees a reservation whose holder died once its time is past and it blocks a claim", async () => {
      let clock = Date.parse("2030-01-01T12:00:00Z");
      const l = ledger(() => new Date(clock));
      const scopes = [limited(user, { tokensPerDay: 1_000 })];
      await l.claim(scopes, { reservation: { id: "dead~0", amount: { tokens: 800, micros: 0 } } });
      await expect(l.claim(scopes, { reservation: { id: "next~0", amount: { tokens: 800, micros: 0 } } })).rejects.toBeInstanceOf(BudgetExhaustedError);
      clock += 61_000;
      await expect(l.claim(scopes, { reservation: { id: "next~0", amount: { tokens: 800, micros: 0 } } })).resolves.toMatchObject({ id: "next~0" });
      expect((await l.current(user)).tokensToday).toBe(800);
    });

    it("admits exactly the limit of many claims racing for the same new document", async () => {
      const l = ledger();
      const scopes = [limited(user, { concurrentStreams: 7 })];
      const results = await Promise.allSettled(Array.from({ length: 30 }, (_, i) => l.claim(scopes, { streamId: `s${i}` })));
      expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(7);
      for (const r of results) if (r.status === "rejected") expect(r.reason).toBeInstanceOf(RateLimitedError);
      expect((await l.current(user)).concurrentStreams).toBe(7);
    });
  });

  describe("settle", () => {
    it("replaces the reservation by what the call used and records the day's usage", async () => {
      const l = ledger();
      const held = await l.claim([limited(user, { tokensPerDay: 10_000 })], { reservation: { id: "c~0", amount: { tokens: 3_000, micros: 50 } } });
      if (!held) throw new Error("no reservation");
      await l.settle(held, { tokens: 1_200, micros: 20 }, { inputTokens: 1_000, outputTokens: 200, cacheReadTokens: 0, cacheWriteTokens: 0, firstCall: true });
      expect(await l.current(user)).toMatchObject({ tokensToday: 1_200, usdThisMonth: 0.00002 });
      expect(await l.usage(user, "2030-01-01", "2030-01-01")).toEqual([
        expect.objectContaining({ day: "2030-01-01", turns: 1, modelCalls: 1, inputTokens: 1_000, outputTokens: 200, weightedTokens: 1_200 }),
      ]);
    });
  });
});
