import type { Principal } from "../auth/principal.js";
import { BudgetExhaustedError, RateLimitedError } from "../errors.js";
import { scopesOf } from "./limit-scope.js";
import type { CallReservation, Limits, ModelCallEstimate } from "./limits.js";
import type { HeldReservation } from "./usage-ledger.js";

/** A turn about to run: whose, and whether it goes on from a pause (its approvals decided, or recovery) rather than starts. */
export interface TurnToAdmit {
  turnId: string;
  principal: Principal;
  /**
   * The turn resumes: it takes a start and a concurrency slot like a new turn, and its next model
   * call is reserved when it is made (the first call's reservation is a new turn's). Default: false.
   */
  resumes?: boolean;
  /**
   * The turn comes from the queue: a slot found held is an earlier attempt's that handed the turn
   * on (an API turn the worker takes over) or died (recovery, a redelivery), and this run gives it
   * back. Otherwise a slot found held belongs to another live attempt of the same turn (a retried
   * request), which gives it back, and this run takes and gives back nothing. Default: false.
   */
  adopts?: boolean;
}

/** An admitted turn's hold on its slot, as the runner lets go of it: given back once, however often released. */
export interface TurnHold {
  release(): Promise<void>;
}

/** How {@link TurnAdmission.run} ends an admission its body did not give back. */
export interface AdmissionOptions<T> {
  /** True when the turn went on elsewhere (the worker): its slot stays held for it, its first call's reservation made here is given back. Default: never. */
  handedOff?(result: T): boolean;
  /** What the entry answers to a limit reached at admission, instead of throwing it (a channel tells its user once). Default: throws. */
  refused?(error: RateLimitedError | BudgetExhaustedError): Promise<T>;
}

const reservationId = (turnId: string, call: number) => `${turnId}~${call}`;

/**
 * The one owner of a turn's admission (docs/limits.md, docs/architecture.md): every entry that
 * runs a turn (`/v1` messages, edit and regenerate, Agent Protocol runs, MCP `ask`, the queue
 * worker, approval resumes, channel turns) runs it through {@link run}, which admits it (a start
 * within the rate, a concurrency slot, a new turn's first call reserved), and gives all of it back
 * however the turn ends: answered, refused (409), failed, stopped, thrown, unless handed to the
 * worker. The graph reserves each model call here; the first takes the admission's reservation.
 * Without limits, every turn is admitted and nothing is counted.
 */
export class TurnAdmission {
  /** First calls reserved when their turn was admitted in this container, taken by that call. */
  private readonly firstCalls = new Map<string, HeldReservation>();

  constructor(private readonly limits?: Limits) {}

  /**
   * Admits the turn, runs `body` with its hold, and gives the admission back once `body` settles,
   * whatever it returns or throws, unless `handedOff` says the turn went on elsewhere. Throws the
   * refusal (`RateLimitedError`, `BudgetExhaustedError`) before `body` runs, or answers `refused`'s.
   * Admitting a turn that holds its slot already (a retried request, the worker taking a turn the
   * API handed off) takes nothing twice.
   */
  async run<T>(turn: TurnToAdmit, body: (hold: TurnHold) => Promise<T>, options: AdmissionOptions<T> = {}): Promise<T> {
    let owned: boolean;
    try {
      owned = await this.admit(turn);
    } catch (error) {
      if (options.refused && (error instanceof RateLimitedError || error instanceof BudgetExhaustedError)) return options.refused(error);
      throw error;
    }
    let released: Promise<void> | undefined;
    const hold: TurnHold = { release: () => (released ??= owned ? this.release(turn).catch(() => undefined) : Promise.resolve()) };
    let handedOff = false;
    try {
      const result = await body(hold);
      handedOff = owned && released === undefined && (options.handedOff?.(result) ?? false);
      return result;
    } finally {
      if (handedOff) await this.handOff(turn.turnId).catch(() => undefined);
      else await hold.release();
    }
  }

  /**
   * Reserves a model call before it is made, against every budget of its scopes: its view's
   * estimated input tokens plus the most it may generate. The first call of a turn admitted here
   * takes the admission's reservation (no round trip). Throws `BudgetExhaustedError` when a budget
   * cannot fit it. Without limits, a reservation that holds nothing.
   */
  async reserveCall(call: ModelCallEstimate): Promise<CallReservation> {
    const limits = this.limits;
    if (!limits) return { settle: async () => undefined, release: async () => undefined };
    const admitted = call.call === 0 ? this.firstCalls.get(call.turnId) : undefined;
    if (admitted) this.firstCalls.delete(call.turnId);
    const held =
      admitted ??
      (await limits.ledger.claim(await limits.limitsOf(call.principal), {
        reservation: { id: reservationId(call.turnId, call.call), amount: limits.estimate(call.estimatedInputTokens) },
      }));
    if (!held) throw new TypeError("a reservation claim held no reservation");
    return {
      settle: (usage) => limits.settleCall(held, usage, call.call === 0),
      release: () => limits.ledger.settle(held, { tokens: 0, micros: 0 }).then(() => undefined),
    };
  }

  /**
   * A start within the rate and a slot, and for a new turn its first call reserved at the view's
   * ceiling: one round trip. Returns whether the admission is this run's to give back.
   */
  private async admit(turn: TurnToAdmit): Promise<boolean> {
    const limits = this.limits;
    if (!limits) return false;
    const scopes = await limits.limitsOf(turn.principal);
    const reservation = turn.resumes ? undefined : { id: reservationId(turn.turnId, 0), amount: limits.firstCallEstimate() };
    const taken = await limits.ledger.take(scopes, { turnId: turn.turnId, ...(reservation && { reservation }) });
    if (taken.already) return turn.adopts === true;
    if (taken.reservation) this.firstCalls.set(turn.turnId, taken.reservation);
    return true;
  }

  /** The turn no longer runs: its slot is freed, and its first call's reservation if no call took it. */
  private async release(turn: TurnToAdmit): Promise<void> {
    if (!this.limits) return;
    const pending = this.firstCalls.get(turn.turnId);
    this.firstCalls.delete(turn.turnId);
    const { ledger } = this.limits;
    await Promise.all([ledger.release(scopesOf(turn.principal), "active", turn.turnId), pending && ledger.settle(pending, { tokens: 0, micros: 0 })]);
  }

  /** The turn was handed to another container (the worker): the first call's reservation made here is given back; the slot stays held. */
  private async handOff(turnId: string): Promise<void> {
    const pending = this.firstCalls.get(turnId);
    this.firstCalls.delete(turnId);
    if (pending && this.limits) await this.limits.ledger.settle(pending, { tokens: 0, micros: 0 });
  }
}
