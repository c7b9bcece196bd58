import { MongoBulkWriteError, MongoServerError, type AnyBulkWriteOperation, type Collection, type Db } from "mongodb";
import { RateLimitedError } from "../errors.js";
import { COLLECTIONS } from "../store/collections.js";
import { DailyUsage, type CallUsage, type UsageDay } from "./daily-usage.js";
import { claimLimitReached, claimStatement, type Amount, type Claim, type CounterDocument, type ScopeLimits } from "./limit-claims.js";
import { scopeId, type LimitScope } from "./limit-scope.js";
import { windowsAt, type Windows } from "./windows.js";

/** One document per tenant and per user: what counts against its limits now (docs/limits.md, "How a limit is kept"). */
export const LIMIT_COUNTERS_COLLECTION = COLLECTIONS.limitCounters;
/** Times a claim is tried again when it lost a race to create a counter document, or freed expired holders. */
const CLAIM_ATTEMPTS = 3;

/** A reservation held against every scope of a call, to settle or release. */
export interface HeldReservation {
  id: string;
  amount: Amount;
  day: string;
  month: string;
  scopes: LimitScope[];
}

/** After a settlement: what the scope has spent this month, for the budget metrics. */
export interface ScopeSpend {
  scope: LimitScope;
  monthMicros: number;
  dayTokens: number;
}

const isDuplicateKey = (error: unknown) =>
  (error instanceof MongoBulkWriteError || error instanceof MongoServerError) &&
  (error.code === 11000 || (error instanceof MongoBulkWriteError && Array.isArray(error.writeErrors) && error.writeErrors.some((w) => w.code === 11000)));

/**
 * The counters behind every limit, exact across containers. A claim is one ordered bulk write
 * (one command, one round trip) of a conditional upsert per scope: the filter holds the limits
 * (`turns.<minute>` under the rate, `tokens.<day>` at most the limit less the reservation, …), so
 * a document that does not fit makes the upsert collide with it (duplicate key) and nothing of
 * that scope changes. Only a refusal reads: to name the limit, undo the scopes already claimed,
 * free slots and reservations whose holders died (past their `until`), or retry a lost race to
 * create a document. What each kind of claim asks of a document is in `limit-claims.ts`; the
 * day-by-day record of settled calls in `daily-usage.ts`.
 */
export class UsageLedger {
  private readonly counters: Collection<CounterDocument>;
  private readonly daily: DailyUsage;

  constructor(
    db: Db,
    private readonly options: { reservationTtlMs: number; slotTtlMs: number; now?: () => Date },
  ) {
    this.counters = db.collection<CounterDocument>(LIMIT_COUNTERS_COLLECTION);
    this.daily = new DailyUsage(db, () => this.now());
  }

  private now(): Date {
    return this.options.now?.() ?? new Date();
  }

  async setup(): Promise<void> {
    await this.daily.setup();
  }

  /** Takes the claim against every scope, or none of them; refused, throws the limit that is reached. Returns the reservation held, if any. */
  async claim(scopes: ScopeLimits[], claim: Claim): Promise<HeldReservation | undefined> {
    return (await this.take(scopes, claim)).reservation;
  }

  /**
   * {@link claim}, telling also whether every scope held the claim already (a retried request, a
   * turn handed on with its slot): then this claim took nothing, and has nothing of its own to give back.
   */
  async take(scopes: ScopeLimits[], claim: Claim): Promise<{ reservation?: HeldReservation; already: boolean }> {
    for (let attempt = 1; attempt <= CLAIM_ATTEMPTS; attempt++) {
      const w = windowsAt(this.now());
      const operations = scopes.map((s) => ({ updateOne: { ...this.statement(s, claim, w), upsert: true } })) as AnyBulkWriteOperation<CounterDocument>[];
      try {
        await this.counters.bulkWrite(operations, { ordered: true });
        return { reservation: this.held(scopes, claim, w, claim.reservation?.amount), already: false };
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
      }
      const outcome = await this.refused(scopes, claim, w);
      if (outcome.kind === "held") return { reservation: outcome.settled ? undefined : this.held(scopes, claim, w, outcome.amount), already: true };
      if (outcome.kind === "refused" && (attempt === CLAIM_ATTEMPTS || !(await this.freeExpired(scopes)))) throw outcome.error;
    }
    throw new RateLimitedError("too many requests at once; retry shortly", "race", 1);
  }

  private held(scopes: ScopeLimits[], claim: Claim, w: Windows, amount: Amount | undefined): HeldReservation | undefined {
    if (!claim.reservation) return undefined;
    return { id: claim.reservation.id, amount: amount ?? claim.reservation.amount, day: w.day, month: w.month, scopes: scopes.map((s) => s.scope) };
  }

  /** The conditional upsert of one scope. */
  private statement(s: ScopeLimits, claim: Claim, w: Windows) {
    const { slotTtlMs, reservationTtlMs } = this.options;
    return claimStatement(s, claim, w, { now: this.now(), slotTtlMs, reservationTtlMs });
  }

  /**
   * Why a claim was refused: "held" when every scope already holds it (a retried request or
   * call), else the limit reached (after undoing the scopes this claim took), or "race" when none
   * is reached (two first claims created the same document at once).
   */
  private async refused(
    scopes: ScopeLimits[],
    claim: Claim,
    w: Windows,
  ): Promise<{ kind: "held"; amount?: Amount; settled?: boolean } | { kind: "race" } | { kind: "refused"; error: Error }> {
    const docs = new Map((await this.counters.find({ _id: { $in: scopes.map((s) => scopeId(s.scope)) } }).toArray()).map((d) => [d._id, d]));
    // A turn already admitted holds its slot; its first call's reservation may be settled by now (a retried request).
    const holds = (doc: CounterDocument | undefined) =>
      doc !== undefined &&
      (claim.turnId
        ? doc.active?.[claim.turnId] !== undefined
        : (!claim.streamId || doc.streams?.[claim.streamId] !== undefined) && (!claim.reservation || doc.res?.[claim.reservation.id] !== undefined));
    const held = scopes.map((s) => holds(docs.get(scopeId(s.scope))));
    if (held.every(Boolean)) {
      const record = claim.reservation ? docs.get(scopeId(scopes[0].scope))?.res?.[claim.reservation.id] : undefined;
      if (claim.turnId && !record) return { kind: "held", settled: true };
      return { kind: "held", ...(record && { amount: { tokens: record.tokens, micros: record.micros } }) };
    }
    let reached: Error | undefined;
    for (const [i, s] of scopes.entries()) {
      if (held[i]) continue;
      reached ??= this.limitReached(s, docs.get(scopeId(s.scope)), claim, w);
    }
    // The ordered bulk stopped at the first scope refused; those before it took the claim and give it back.
    const firstRefused = held.indexOf(false);
    await Promise.all(scopes.slice(0, firstRefused).map((s) => this.undo(s.scope, claim, w)));
    return reached ? { kind: "refused", error: reached } : { kind: "race" };
  }

  private limitReached(s: ScopeLimits, doc: CounterDocument | undefined, claim: Claim, w: Windows): Error | undefined {
    return claimLimitReached(s, doc, claim, w, this.now());
  }

  /** Gives back what a claim took of one scope, if it holds it. */
  private async undo(scope: LimitScope, claim: Claim, w: Windows): Promise<void> {
    const _id = scopeId(scope);
    const steps: Promise<unknown>[] = [];
    if (claim.turnId) {
      steps.push(
        this.counters.updateOne(
          { _id, [`active.${claim.turnId}`]: { $exists: true } },
          { $unset: { [`active.${claim.turnId}`]: "" }, $inc: { activeCount: -1, [`turns.${w.minute}`]: -1 } },
        ),
      );
    }
    if (claim.streamId) steps.push(this.releaseSlot(scope, "streams", claim.streamId));
    if (claim.reservation) steps.push(this.settleScope(scope, { ...claim.reservation, day: w.day, month: w.month, scopes: [scope] }, { tokens: 0, micros: 0 }));
    await Promise.all(steps);
  }

  /**
   * Frees what holders that died left behind in the scopes' documents: slots and reservations
   * past their `until`, each freed only if it is still the same entry. Returns whether any was.
   */
  private async freeExpired(scopes: ScopeLimits[]): Promise<boolean> {
    const now = this.now();
    const docs = await this.counters.find({ _id: { $in: scopes.map((s) => scopeId(s.scope)) } }).toArray();
    const steps: Promise<{ modifiedCount: number }>[] = [];
    for (const doc of docs) {
      for (const [field, count] of [
        ["active", "activeCount"],
        ["streams", "streamCount"],
      ] as const) {
        for (const [id, until] of Object.entries(doc[field] ?? {})) {
          if (until > now) continue;
          steps.push(this.counters.updateOne({ _id: doc._id, [`${field}.${id}`]: until }, { $unset: { [`${field}.${id}`]: "" }, $inc: { [count]: -1 } }));
        }
      }
      for (const [id, r] of Object.entries(doc.res ?? {})) {
        if (r.until > now) continue;
        steps.push(
          this.counters.updateOne(
            { _id: doc._id, [`res.${id}.until`]: r.until },
            { $unset: { [`res.${id}`]: "" }, $inc: { [`tokens.${r.day}`]: -r.tokens, [`micros.${r.month}`]: -r.micros } },
          ),
        );
      }
    }
    const results = await Promise.all(steps);
    return results.some((r) => r.modifiedCount > 0);
  }

  /**
   * True once per scope, limit and window (`window`, e.g. when the budget resets): whether this
   * refusal is the first the scope meets in it, so a channel tells its user once, not at every message.
   */
  async claimNotice(scope: LimitScope, limit: string, window: string): Promise<boolean> {
    const field = `notified.${limit.replaceAll(".", "_")}`;
    try {
      const result = await this.counters.updateOne({ _id: scopeId(scope), [field]: { $ne: window } }, { $set: { [field]: window } }, { upsert: true });
      return result.modifiedCount + result.upsertedCount > 0;
    } catch (error) {
      if (isDuplicateKey(error)) return false;
      throw error;
    }
  }

  /** Frees a turn's or stream's slot in every scope that holds it. */
  async release(scopes: LimitScope[], kind: "active" | "streams", id: string): Promise<void> {
    await Promise.all(scopes.map((scope) => this.releaseSlot(scope, kind, id)));
  }

  private releaseSlot(scope: LimitScope, kind: "active" | "streams", id: string) {
    const count = kind === "active" ? "activeCount" : "streamCount";
    return this.counters.updateOne({ _id: scopeId(scope), [`${kind}.${id}`]: { $exists: true } }, { $unset: { [`${kind}.${id}`]: "" }, $inc: { [count]: -1 } });
  }

  /**
   * Replaces a reservation by what the call used, in every scope, and adds the use to the day's
   * usage (`usage` absent: the call never ran, nothing is recorded). A reservation already freed
   * as expired is not given back twice: the use is added on its own.
   */
  async settle(r: HeldReservation, actual: Amount, usage?: CallUsage & { firstCall: boolean }): Promise<ScopeSpend[]> {
    const spends = Promise.all(r.scopes.map((scope) => this.settleScope(scope, r, actual)));
    if (usage) await Promise.all(r.scopes.map((scope) => this.daily.record(scope, actual, usage)));
    return spends;
  }

  private async settleScope(scope: LimitScope, r: HeldReservation, actual: Amount): Promise<ScopeSpend> {
    const _id = scopeId(scope);
    const w = windowsAt(this.now());
    let doc = await this.counters.findOneAndUpdate(
      { _id, [`res.${r.id}`]: { $exists: true } },
      {
        $unset: { [`res.${r.id}`]: "" },
        $inc: { [`tokens.${r.day}`]: actual.tokens - r.amount.tokens, [`micros.${r.month}`]: actual.micros - r.amount.micros },
      },
      { returnDocument: "after" },
    );
    if (!doc && (actual.tokens > 0 || actual.micros > 0)) {
      doc = await this.counters.findOneAndUpdate(
        { _id },
        { $inc: { [`tokens.${w.day}`]: actual.tokens, [`micros.${w.month}`]: actual.micros } },
        { upsert: true, returnDocument: "after" },
      );
    }
    if (doc) this.dropStaleWindows(doc, w);
    return { scope, monthMicros: doc?.micros?.[w.month] ?? 0, dayTokens: doc?.tokens?.[w.day] ?? 0 };
  }

  /** Window keys of past minutes, days and months no longer count: removed, off the request's path. */
  private dropStaleWindows(doc: CounterDocument, w: Windows): void {
    const unset: Record<string, ""> = {};
    for (const key of Object.keys(doc.turns ?? {})) if (key < w.minute) unset[`turns.${key}`] = "";
    for (const key of Object.keys(doc.tokens ?? {})) if (key < w.day && !Object.values(doc.res ?? {}).some((r) => r.day === key)) unset[`tokens.${key}`] = "";
    for (const key of Object.keys(doc.micros ?? {}))
      if (key < w.month && !Object.values(doc.res ?? {}).some((r) => r.month === key)) unset[`micros.${key}`] = "";
    if (Object.keys(unset).length > 0) void this.counters.updateOne({ _id: doc._id }, { $unset: unset }).catch(() => undefined);
  }

  /** A scope's usage by day, `from` to `to` inclusive (`YYYY-MM-DD`), oldest first. */
  usage(scope: LimitScope, from: string, to: string): Promise<UsageDay[]> {
    return this.daily.usage(scope, from, to);
  }

  /** What counts against a scope's limits now: turns this minute, slots held, tokens today, dollars this month (reservations included). */
  async current(
    scope: LimitScope,
  ): Promise<{ turnsThisMinute: number; concurrentTurns: number; concurrentStreams: number; tokensToday: number; usdThisMonth: number }> {
    const doc = await this.counters.findOne({ _id: scopeId(scope) });
    const w = windowsAt(this.now());
    return {
      turnsThisMinute: doc?.turns?.[w.minute] ?? 0,
      concurrentTurns: doc?.activeCount ?? 0,
      concurrentStreams: doc?.streamCount ?? 0,
      tokensToday: doc?.tokens?.[w.day] ?? 0,
      usdThisMonth: (doc?.micros?.[w.month] ?? 0) / 1_000_000,
    };
  }
}
