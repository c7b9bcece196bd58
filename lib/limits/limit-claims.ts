import { BudgetExhaustedError, RateLimitedError } from "../errors.js";
import type { LimitName } from "../config/limits-config.js";
import { scopeId, type LimitScope } from "./limit-scope.js";
import type { Windows } from "./windows.js";

/**
 * The three kinds of claim a scope's counter document holds, each apart: a turn's start and slot,
 * a stream's slot, a model call's reservation. For each, what it adds to the scope's conditional
 * upsert (the conditions that keep it under its limits, and what it counts) and, when the scope
 * refused it, the limit it names. `UsageLedger` combines them into one claim.
 */

/** Seconds a client is asked to wait when it holds as many turns or streams as it may. */
export const CONCURRENCY_RETRY_AFTER_S = 5;

/** A model call's cost as the limits count it: weighted tokens, and micro-dollars (integers, so sums are exact). */
export interface Amount {
  tokens: number;
  micros: number;
}

export interface ReservationRecord extends Amount {
  day: string;
  month: string;
  until: Date;
}

/** Field names are window keys, turn ids and reservation ids; counts are integers. */
export interface CounterDocument {
  _id: string;
  /** Turns started, by minute. */
  turns?: Record<string, number>;
  /** Turns holding a concurrency slot, until when. */
  active?: Record<string, Date>;
  activeCount?: number;
  streams?: Record<string, Date>;
  streamCount?: number;
  /** Weighted tokens settled and reserved, by day. */
  tokens?: Record<string, number>;
  /** Micro-dollars settled and reserved, by month. */
  micros?: Record<string, number>;
  /** Reservations of model calls not settled yet. */
  res?: Record<string, ReservationRecord>;
}

/** A scope and the limits that apply to it (null: none). */
export interface ScopeLimits {
  scope: LimitScope;
  limits: Record<LimitName, number | null>;
}

/** What one claim takes: a turn's slot and start, a stream's slot, a model call's reservation. */
export interface Claim {
  turnId?: string;
  streamId?: string;
  reservation?: { id: string; amount: Amount };
}

/** Micro-dollars of a limit in US dollars. */
export const microsOf = (usd: number) => Math.round(usd * 1_000_000);

/** One scope's conditional upsert: the filter that keeps it under its limits, what it counts, what it holds. */
export interface ClaimStatement {
  filter: Record<string, unknown>;
  update: { $inc: Record<string, number>; $set: Record<string, unknown> };
}

/** When the holders of slots and reservations taken now lapse, if they die before giving them back. */
export interface ClaimTimes {
  now: Date;
  slotTtlMs: number;
  reservationTtlMs: number;
}

type Parts = { filter: Record<string, unknown>; inc: Record<string, number>; set: Record<string, unknown> };

const after = (now: Date, ms: number) => new Date(now.getTime() + ms);

/** A turn: not started twice, under the turns per minute and the turns at once; counts the minute's start and holds a slot. */
function addTurn({ filter, inc, set }: Parts, limits: ScopeLimits["limits"], turnId: string, w: Windows, times: ClaimTimes): void {
  filter[`active.${turnId}`] = { $exists: false };
  if (limits.turnsPerMinute !== null) filter[`turns.${w.minute}`] = { $not: { $gte: limits.turnsPerMinute } };
  if (limits.concurrentTurns !== null) filter.activeCount = { $not: { $gte: limits.concurrentTurns } };
  inc[`turns.${w.minute}`] = 1;
  inc.activeCount = 1;
  set[`active.${turnId}`] = after(times.now, times.slotTtlMs);
}

/** A stream: not held twice, under the streams at once; holds a slot. */
function addStream({ filter, inc, set }: Parts, limits: ScopeLimits["limits"], streamId: string, times: ClaimTimes): void {
  filter[`streams.${streamId}`] = { $exists: false };
  if (limits.concurrentStreams !== null) filter.streamCount = { $not: { $gte: limits.concurrentStreams } };
  inc.streamCount = 1;
  set[`streams.${streamId}`] = after(times.now, times.slotTtlMs);
}

/** A model call's reservation: not held twice, its amount within the day's tokens and the month's dollars; counts it and holds its record. */
function addReservation(
  { filter, inc, set }: Parts,
  limits: ScopeLimits["limits"],
  reservation: NonNullable<Claim["reservation"]>,
  w: Windows,
  times: ClaimTimes,
): void {
  const { id, amount } = reservation;
  filter[`res.${id}`] = { $exists: false };
  if (limits.tokensPerDay !== null) filter[`tokens.${w.day}`] = { $not: { $gt: limits.tokensPerDay - amount.tokens } };
  if (limits.usdPerMonth !== null) filter[`micros.${w.month}`] = { $not: { $gt: microsOf(limits.usdPerMonth) - amount.micros } };
  inc[`tokens.${w.day}`] = amount.tokens;
  inc[`micros.${w.month}`] = amount.micros;
  set[`res.${id}`] = { ...amount, day: w.day, month: w.month, until: after(times.now, times.reservationTtlMs) } satisfies ReservationRecord;
}

/** The conditional upsert of one scope for every kind the claim holds. */
export function claimStatement(s: ScopeLimits, claim: Claim, w: Windows, times: ClaimTimes): ClaimStatement {
  const parts: Parts = { filter: { _id: scopeId(s.scope) }, inc: {}, set: {} };
  if (claim.turnId) addTurn(parts, s.limits, claim.turnId, w, times);
  if (claim.streamId) addStream(parts, s.limits, claim.streamId, times);
  if (claim.reservation) addReservation(parts, s.limits, claim.reservation, w, times);
  return { filter: parts.filter, update: { $inc: parts.inc, $set: parts.set } };
}

/** How a refusal names its scope's limit: whose it is, and its name (`user.turnsPerMinute`). */
interface Refusal {
  who: string;
  name: (limit: LimitName) => string;
  /** Whole seconds until `at`, at least one. */
  seconds: (at: Date) => number;
}

function turnLimitReached(limits: ScopeLimits["limits"], doc: CounterDocument | undefined, w: Windows, { who, name, seconds }: Refusal): Error | undefined {
  if (limits.turnsPerMinute !== null && (doc?.turns?.[w.minute] ?? 0) >= limits.turnsPerMinute) {
    return new RateLimitedError(`${who} limit of ${limits.turnsPerMinute} turns per minute is reached`, name("turnsPerMinute"), seconds(w.minuteEnds));
  }
  if (limits.concurrentTurns !== null && (doc?.activeCount ?? 0) >= limits.concurrentTurns) {
    return new RateLimitedError(`${who} limit of ${limits.concurrentTurns} turns at once is reached`, name("concurrentTurns"), CONCURRENCY_RETRY_AFTER_S);
  }
  return undefined;
}

function streamLimitReached(limits: ScopeLimits["limits"], doc: CounterDocument | undefined, { who, name }: Refusal): Error | undefined {
  if (limits.concurrentStreams !== null && (doc?.streamCount ?? 0) >= limits.concurrentStreams) {
    return new RateLimitedError(`${who} limit of ${limits.concurrentStreams} streams at once is reached`, name("concurrentStreams"), CONCURRENCY_RETRY_AFTER_S);
  }
  return undefined;
}

function reservationLimitReached(
  limits: ScopeLimits["limits"],
  doc: CounterDocument | undefined,
  amount: Amount,
  w: Windows,
  { who, name }: Refusal,
): Error | undefined {
  if (limits.tokensPerDay !== null && (doc?.tokens?.[w.day] ?? 0) > limits.tokensPerDay - amount.tokens) {
    return new BudgetExhaustedError(`${who} budget of ${limits.tokensPerDay} model tokens per day is used up`, name("tokensPerDay"), w.dayEnds);
  }
  if (limits.usdPerMonth !== null && (doc?.micros?.[w.month] ?? 0) > microsOf(limits.usdPerMonth) - amount.micros) {
    return new BudgetExhaustedError(`${who} budget of ${limits.usdPerMonth} US dollars per month is used up`, name("usdPerMonth"), w.monthEnds);
  }
  return undefined;
}

/**
 * The limit a scope's document leaves no room under for this claim, checked kind by kind (a turn,
 * then a stream, then a reservation), as the error that names it; undefined when none is reached.
 */
export function claimLimitReached(s: ScopeLimits, doc: CounterDocument | undefined, claim: Claim, w: Windows, now: Date): Error | undefined {
  const { limits, scope } = s;
  const refusal: Refusal = {
    who: scope.kind === "user" ? "your" : "your organization's",
    name: (limit) => `${scope.kind}.${limit}`,
    seconds: (at) => Math.max(1, Math.ceil((at.getTime() - now.getTime()) / 1000)),
  };
  return (
    (claim.turnId ? turnLimitReached(limits, doc, w, refusal) : undefined) ??
    (claim.streamId ? streamLimitReached(limits, doc, refusal) : undefined) ??
    (claim.reservation ? reservationLimitReached(limits, doc, claim.reservation.amount, w, refusal) : undefined)
  );
}
