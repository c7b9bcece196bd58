import type { Db } from "mongodb";
import type { Principal } from "../auth/principal.js";
import type { LimitsConfig, LimitValues } from "../config/limits-config.js";
import type { ModelPrice } from "../config/model-config.js";
import type { StructuredLogger } from "../logger.js";
import { BudgetExhaustedError, type RateLimitedError } from "../errors.js";
import { windowsAt } from "./windows.js";
import { effectiveLimits, LimitOverrides } from "./limit-overrides.js";
import { scopesOf, type LimitScope } from "./limit-scope.js";
import type { CallUsage, UsageDay } from "./daily-usage.js";
import { microsOf, type Amount, type ScopeLimits } from "./limit-claims.js";
import { UsageLedger, type HeldReservation, type ScopeSpend } from "./usage-ledger.js";

/** What one settled model call adds to a tenant's or user's usage, for the usage metrics (tenant as a property, never a dimension). */
export interface LimitUsageEvent {
  scope: LimitScope;
  tokens: number;
  costUsd: number;
  /** This month's spend against the scope's monthly budget, in percent; absent without a budget. */
  budgetPercent?: number;
}
export type LimitUsageSink = (event: LimitUsageEvent) => void;

export interface LimitsOptions {
  config: LimitsConfig;
  /** The model's price; absent (the local model), calls cost nothing and tokens are not weighted. */
  price?: ModelPrice;
  /** The most a call may generate (`MODEL_MAX_TOKENS`), reserved with each call. */
  maxOutputTokens: number;
  /** What the first call of a turn is reserved at when the turn is admitted, before its view exists: the view's ceiling. */
  firstCallInputTokens: number;
  now?: () => Date;
  onUsage?: LimitUsageSink;
  logger?: StructuredLogger;
}

/** What a turn's model call does with its reservation once it returns, or fails. */
export interface CallReservation {
  settle(usage: CallUsage & { costUsd?: number }): Promise<void>;
  release(): Promise<void>;
}

/** One model call about to be made: whose turn, which call, how many input tokens its view is estimated at in the model's count. */
export interface ModelCallEstimate {
  turnId: string;
  principal: Principal;
  call: number;
  estimatedInputTokens: number;
}

/**
 * Budgets and rate limits per tenant and user (docs/limits.md): the defaults of configuration,
 * each scope's own limits from the database, and the counters that keep them exact across
 * containers, and what a call costs as they count it. A turn is admitted, and its calls reserved,
 * by its one owner, `TurnAdmission`; each call settles here with what it used.
 */
export class Limits {
  readonly overrides: LimitOverrides;
  readonly ledger: UsageLedger;
  private readonly weights: { cacheRead: number; cacheWrite: number; cacheWrite1h: number };

  constructor(
    db: Db,
    private readonly options: LimitsOptions,
  ) {
    const now = () => (options.now?.() ?? new Date()).getTime();
    this.overrides = new LimitOverrides(db, { cacheMs: options.config.cacheSeconds * 1000, now });
    this.ledger = new UsageLedger(db, {
      reservationTtlMs: options.config.reservationTtlSeconds * 1000,
      slotTtlMs: options.config.slotTtlSeconds * 1000,
      now: options.now,
    });
    const p = options.price;
    this.weights =
      p && p.input > 0
        ? { cacheRead: p.cacheRead / p.input, cacheWrite: p.cacheWrite / p.input, cacheWrite1h: p.cacheWrite1h / p.input }
        : { cacheRead: 1, cacheWrite: 1, cacheWrite1h: 1 };
  }

  /** The defaults of a scope's kind. */
  defaults(kind: LimitScope["kind"]): LimitValues {
    return kind === "user" ? this.options.config.user : this.options.config.tenant;
  }

  /** The limits that apply to each scope of a principal (one read of the database per cache period). */
  async limitsOf(principal: Principal): Promise<ScopeLimits[]> {
    const scopes = scopesOf(principal);
    const own = await this.overrides.forScopes(scopes);
    return scopes.map((scope, i) => ({ scope, limits: effectiveLimits(this.defaults(scope.kind), own[i]) }));
  }

  /** Takes a stream slot; throws `RateLimitedError` at the limit. */
  async openStream(streamId: string, principal: Principal): Promise<void> {
    await this.ledger.claim(await this.limitsOf(principal), { streamId });
  }

  async closeStream(streamId: string, principal: Principal): Promise<void> {
    await this.ledger.release(scopesOf(principal), "streams", streamId);
  }

  /** A new turn's first call as its admission reserves it, before its view exists: at the view's ceiling. */
  firstCallEstimate(): Amount {
    return this.estimate(this.options.firstCallInputTokens);
  }

  /** A call's worst case: every input token written to the cache at the dearest price, plus the whole output. */
  estimate(inputTokens: number): Amount {
    const maxOutput = this.options.maxOutputTokens;
    const weight = Math.max(1, this.weights.cacheWrite, this.weights.cacheWrite1h);
    const p = this.options.price;
    const inputPrice = p ? Math.max(p.input, p.cacheWrite, p.cacheWrite1h) : 0;
    return { tokens: Math.ceil(inputTokens * weight) + maxOutput, micros: p ? Math.ceil(inputTokens * inputPrice + maxOutput * p.output) : 0 };
  }

  /** What a call used as the limits count it: cache reads and writes weighted by their price against the input price. */
  amountOf(usage: CallUsage & { costUsd?: number }): Amount {
    const plain = Math.max(0, usage.inputTokens - usage.cacheReadTokens - usage.cacheWriteTokens);
    const tokens = plain + usage.outputTokens + usage.cacheReadTokens * this.weights.cacheRead + usage.cacheWriteTokens * this.weights.cacheWrite;
    return { tokens: Math.ceil(tokens), micros: Math.ceil((usage.costUsd ?? 0) * 1_000_000) };
  }

  /** Settles a model call's reservation with what the call used (`firstCall`: the turn's call 0, which counts the turn in the day's usage). */
  async settleCall(held: HeldReservation, usage: CallUsage & { costUsd?: number }, firstCall: boolean): Promise<void> {
    const actual = this.amountOf(usage);
    const spends = await this.ledger.settle(held, actual, { ...usage, firstCall });
    if (this.options.onUsage) await this.report(spends, actual);
  }

  private async report(spends: ScopeSpend[], actual: Amount): Promise<void> {
    const principalLimits = new Map((await this.overrides.forScopes(spends.map((s) => s.scope))).map((own, i) => [i, own]));
    spends.forEach((spend, i) => {
      const budget = effectiveLimits(this.defaults(spend.scope.kind), principalLimits.get(i)).usdPerMonth;
      this.options.onUsage?.({
        scope: spend.scope,
        tokens: actual.tokens,
        costUsd: actual.micros / 1_000_000,
        ...(budget !== null && { budgetPercent: (100 * spend.monthMicros) / microsOf(budget) }),
      });
    });
  }

  /**
   * Whether a channel should tell the user of this refusal: true for the first refusal of a limit
   * in its window (until the budget resets, or this minute for a rate), false for the rest.
   */
  async claimNotice(principal: Principal, error: RateLimitedError | BudgetExhaustedError): Promise<boolean> {
    const now = this.options.now?.() ?? new Date();
    const window = error instanceof BudgetExhaustedError ? error.resetsAt.toISOString() : windowsAt(now).minute;
    return this.ledger.claimNotice(scopesOf(principal)[0], error.limit, window);
  }

  /** A scope's usage per day, `from` to `to` (`YYYY-MM-DD`). */
  usage(scope: LimitScope, from: string, to: string): Promise<UsageDay[]> {
    return this.ledger.usage(scope, from, to);
  }
}
