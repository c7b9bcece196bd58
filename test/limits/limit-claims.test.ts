import { describe, expect, it } from "vitest";
import type { LimitName } from "../../lib/config/limits-config.js";
import { BudgetExhaustedError, RateLimitedError } from "../../lib/errors.js";
import { CONCURRENCY_RETRY_AFTER_S, claimLimitReached, claimStatement, microsOf, type ScopeLimits } from "../../lib/limits/limit-claims.js";
import type { LimitScope } from "../../lib/limits/limit-scope.js";
import { windowsAt } from "../../lib/limits/windows.js";

const NOW = new Date("2030-01-01T12:00:30Z");
const w = windowsAt(NOW);
const times = { now: NOW, slotTtlMs: 60_000, reservationTtlMs: 120_000 };
const user: LimitScope = { kind: "user", issuer: "api", tenant: "acme", subject: "ada" };
const tenant: LimitScope = { kind: "tenant", issuer: "api", tenant: "acme", subject: null };
const none: Record<LimitName, number | null> = { turnsPerMinute: null, concurrentTurns: null, concurrentStreams: null, tokensPerDay: null, usdPerMonth: null };
const limited = (scope: LimitScope, limits: Partial<Record<LimitName, number>>): ScopeLimits => ({ scope, limits: { ...none, ...limits } });
const amount = { tokens: 300, micros: 40 };

describe("limit-claims", () => {
  describe("claimStatement", () => {
    it("returns a turn's conditions under its limits, its minute's start and a slot until the slot's lapse", () => {
      const { filter, update } = claimStatement(limited(user, { turnsPerMinute: 5, concurrentTurns: 2 }), { turnId: "t1" }, w, times);
      expect(filter).toEqual({
        _id: expect.any(String),
        "active.t1": { $exists: false },
        [`turns.${w.minute}`]: { $not: { $gte: 5 } },
        activeCount: { $not: { $gte: 2 } },
      });
      expect(update).toEqual({ $inc: { [`turns.${w.minute}`]: 1, activeCount: 1 }, $set: { "active.t1": new Date(NOW.getTime() + 60_000) } });
    });

    it("returns a stream's slot, and no limit condition where the scope has none", () => {
      const { filter, update } = claimStatement(limited(user, {}), { streamId: "s1" }, w, times);
      expect(filter).toEqual({ _id: expect.any(String), "streams.s1": { $exists: false } });
      expect(update).toEqual({ $inc: { streamCount: 1 }, $set: { "streams.s1": new Date(NOW.getTime() + 60_000) } });
    });

    it("returns a reservation's room under the day's tokens and the month's dollars, its counts and its record", () => {
      const { filter, update } = claimStatement(limited(tenant, { tokensPerDay: 1_000, usdPerMonth: 2 }), { reservation: { id: "r1", amount } }, w, times);
      expect(filter).toMatchObject({
        "res.r1": { $exists: false },
        [`tokens.${w.day}`]: { $not: { $gt: 700 } },
        [`micros.${w.month}`]: { $not: { $gt: microsOf(2) - 40 } },
      });
      expect(update.$inc).toEqual({ [`tokens.${w.day}`]: 300, [`micros.${w.month}`]: 40 });
      expect(update.$set).toEqual({ "res.r1": { ...amount, day: w.day, month: w.month, until: new Date(NOW.getTime() + 120_000) } });
    });

    it("returns the three kinds together in one statement", () => {
      const { update } = claimStatement(limited(user, {}), { turnId: "t1", streamId: "s1", reservation: { id: "r1", amount } }, w, times);
      expect(Object.keys(update.$set)).toEqual(["active.t1", "streams.s1", "res.r1"]);
    });
  });

  describe("claimLimitReached", () => {
    it("returns RateLimitedError for the minute's turns, retrying when the minute ends", () => {
      const error = claimLimitReached(limited(user, { turnsPerMinute: 2 }), { _id: "x", turns: { [w.minute]: 2 } }, { turnId: "t3" }, w, NOW);
      expect(error).toBeInstanceOf(RateLimitedError);
      expect(error).toMatchObject({ limit: "user.turnsPerMinute", retryAfterSeconds: 30, message: "your limit of 2 turns per minute is reached" });
    });

    it("returns RateLimitedError for turns and streams at once, retrying after CONCURRENCY_RETRY_AFTER_S", () => {
      expect(claimLimitReached(limited(tenant, { concurrentTurns: 1 }), { _id: "x", activeCount: 1 }, { turnId: "t2" }, w, NOW)).toMatchObject({
        limit: "tenant.concurrentTurns",
        retryAfterSeconds: CONCURRENCY_RETRY_AFTER_S,
        message: "your organization's limit of 1 turns at once is reached",
      });
      expect(claimLimitReached(limited(user, { concurrentStreams: 1 }), { _id: "x", streamCount: 1 }, { streamId: "s2" }, w, NOW)).toMatchObject({
        limit: "user.concurrentStreams",
      });
    });

    it("returns BudgetExhaustedError for a reservation past the day's tokens or the month's dollars, resetting when the window ends", () => {
      const tokens = claimLimitReached(
        limited(user, { tokensPerDay: 1_000 }),
        { _id: "x", tokens: { [w.day]: 800 } },
        { reservation: { id: "r", amount } },
        w,
        NOW,
      );
      expect(tokens).toBeInstanceOf(BudgetExhaustedError);
      expect(tokens).toMatchObject({ limit: "user.tokensPerDay", resetsAt: w.dayEnds });
      const dollars = claimLimitReached(
        limited(user, { usdPerMonth: 1 }),
        { _id: "x", micros: { [w.month]: microsOf(1) } },
        { reservation: { id: "r", amount } },
        w,
        NOW,
      );
      expect(dollars).toMatchObject({ limit: "user.usdPerMonth", resetsAt: w.monthEnds });
    });

    it("returns undefined when the document leaves room, or when there is none yet", () => {
      const scope = limited(user, { turnsPerMinute: 2, concurrentTurns: 2, concurrentStreams: 2, tokensPerDay: 1_000 });
      const claim = { turnId: "t", streamId: "s", reservation: { id: "r", amount } };
      expect(
        claimLimitReached(scope, { _id: "x", turns: { [w.minute]: 1 }, activeCount: 1, streamCount: 1, tokens: { [w.day]: 700 } }, claim, w, NOW),
      ).toBeUndefined();
      expect(claimLimitReached(scope, undefined, claim, w, NOW)).toBeUndefined();
    });
  });
});
