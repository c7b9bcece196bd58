import type { Collection, Db } from "mongodb";
import { COLLECTIONS } from "../store/collections.js";
import type { Amount } from "./limit-claims.js";
import { scopeId, type LimitScope } from "./limit-scope.js";
import { isoDay, windowsAt } from "./windows.js";

/** One document per tenant or user and UTC day: what was used, by kind, for the admin API. */
export const USAGE_DAILY_COLLECTION = COLLECTIONS.usageDaily;
/** Days a day's usage is kept. */
export const USAGE_RETENTION_DAYS = 400;

/** What a settled call used, by kind, for the day's usage. */
export interface CallUsage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
}

/** A day of a scope's usage, as the admin API shows it. */
export interface UsageDay {
  day: string;
  turns: number;
  modelCalls: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /** Tokens as the limits count them (cache reads and writes weighted as priced). */
  weightedTokens: number;
  costUsd: number;
}

interface UsageDailyDocument extends Omit<UsageDay, "day" | "costUsd"> {
  _id: string;
  scopeId: string;
  day: string;
  costMicros: number;
  expireAt: Date;
}

/**
 * What each scope used, by UTC day, kept {@link USAGE_RETENTION_DAYS} days: a record of settled
 * calls for the admin API, apart from the counters that enforce the limits (`UsageLedger`).
 */
export class DailyUsage {
  private readonly daily: Collection<UsageDailyDocument>;

  constructor(
    db: Db,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.daily = db.collection<UsageDailyDocument>(USAGE_DAILY_COLLECTION);
  }

  async setup(): Promise<void> {
    await Promise.all([
      this.daily.createIndex({ scopeId: 1, day: 1 }, { name: "scope_day" }),
      this.daily.createIndex({ expireAt: 1 }, { name: "expiry", expireAfterSeconds: 0 }),
    ]);
  }

  /** Adds one settled call to the scope's day (`firstCall`: the turn's first, which counts the turn). */
  async record(scope: LimitScope, actual: Amount, usage: CallUsage & { firstCall: boolean }): Promise<void> {
    const now = this.now();
    const day = windowsAt(now).day;
    const id = scopeId(scope);
    await this.daily.updateOne(
      { _id: `${id}|${day}` },
      {
        $inc: {
          turns: usage.firstCall ? 1 : 0,
          modelCalls: 1,
          inputTokens: usage.inputTokens,
          outputTokens: usage.outputTokens,
          cacheReadTokens: usage.cacheReadTokens,
          cacheWriteTokens: usage.cacheWriteTokens,
          weightedTokens: actual.tokens,
          costMicros: actual.micros,
        },
        $setOnInsert: { scopeId: id, day, expireAt: new Date(now.getTime() + USAGE_RETENTION_DAYS * 86_400_000) },
      },
      { upsert: true },
    );
  }

  /** A scope's usage by day, `from` to `to` inclusive (`YYYY-MM-DD`), oldest first. */
  async usage(scope: LimitScope, from: string, to: string): Promise<UsageDay[]> {
    const key = (iso: string) => iso.replaceAll("-", "");
    const docs = await this.daily
      .find({ scopeId: scopeId(scope), day: { $gte: key(from), $lte: key(to) } })
      .sort({ day: 1 })
      .toArray();
    return docs.map((d) => ({
      day: isoDay(d.day),
      turns: d.turns,
      modelCalls: d.modelCalls,
      inputTokens: d.inputTokens,
      outputTokens: d.outputTokens,
      cacheReadTokens: d.cacheReadTokens,
      cacheWriteTokens: d.cacheWriteTokens,
      weightedTokens: d.weightedTokens,
      costUsd: d.costMicros / 1_000_000,
    }));
  }
}
