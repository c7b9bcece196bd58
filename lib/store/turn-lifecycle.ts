import { MODEL_ERROR_CODES } from "../errors.js";

/**
 * `superseded`: a retried turn that was no longer its conversation's latest; it keeps its
 * question and has no answer. `awaiting_approval`: paused before tool calls a person must
 * approve (docs/approvals.md); it resumes once every one is decided.
 */
export const TURN_STATUSES = ["queued", "running", "awaiting_approval", "completed", "failed", "superseded"] as const;
export type TurnStatus = (typeof TURN_STATUSES)[number];

/**
 * Every way a turn's status may change, and who moves it (docs/recovery.md). `TurnStore` is the
 * only writer of a status, one method per transition; the runner, the approvals and the recovery
 * sweep are its callers. A transition not listed here is a bug.
 */
export const TURN_TRANSITIONS = [
  { from: "queued", to: "running", by: "claim", who: "an attempt takes the turn (worker, retry, recovery's job)" },
  { from: "queued", to: "failed", by: "reject", who: "the worker refuses a job before it runs (too long)" },
  { from: "running", to: "running", by: "claim", who: "a later attempt takes over a turn whose attempt lost its lease" },
  { from: "running", to: "completed", by: "complete", who: "the attempt's answer, or recovery recording the answer the thread holds" },
  { from: "running", to: "failed", by: "fail", who: "the attempt's error, or recovery ending a turn it cannot resume (code interrupted)" },
  {
    from: "running",
    to: "queued",
    by: "requeue",
    who: "the attempt stopped at its deadline or failed on an error its queue job is retried after, or recovery handing the turn to the queue",
  },
  { from: "running", to: "awaiting_approval", by: "awaitApproval", who: "the graph paused before calls a person must decide" },
  { from: "running", to: "superseded", by: "supersede", who: "a later question began first" },
  { from: "awaiting_approval", to: "running", by: "claim", who: "the resume job once every call is decided (or the attempt itself: resumeDecided)" },
  { from: "awaiting_approval", to: "superseded", by: "supersedeAwaiting", who: "a newer question ends the waiting turn" },
  { from: "failed", to: "running", by: "claim", who: "a retry with the same turn id resumes from the last checkpoint" },
] as const satisfies readonly { from: TurnStatus; to: TurnStatus; by: string; who: string }[];

export type TurnTransition = (typeof TURN_TRANSITIONS)[number];

/**
 * Every code a `failed` turn is stored with and its stream's `failed` event carries, one vocabulary
 * with the API's error bodies (docs/api.md, "Failure codes"): the model's (`MODEL_ERROR_CODES`,
 * `model_credentials`, `model_call_limit`), the context's and the limits', a turn recovery could not
 * resume (`interrupted`), the database unreachable (`service_unavailable`), and `internal_error`
 * for any other error (a bug: the error goes to the caller's error log; its class is never stored). `turn_superseded` is only a
 * stream's: the turn's status is then `superseded`.
 */
export const TURN_FAILURE_CODES = [
  ...MODEL_ERROR_CODES,
  "model_credentials",
  "model_call_limit",
  "context_budget_exceeded",
  "budget_exhausted",
  "rate_limited",
  "payload_too_large",
  "interrupted",
  "turn_superseded",
  "service_unavailable",
  "internal_error",
] as const;
export type TurnFailureCode = (typeof TURN_FAILURE_CODES)[number];

/** Statuses no transition leaves. */
export const FINAL_TURN_STATUSES = ["completed", "superseded"] as const satisfies readonly TurnStatus[];

/**
 * Statuses of a turn that is over: nothing of it runs or waits. The final ones, and `failed`,
 * which only a retry under the same turn id takes up again (`claim`). The one meaning of a
 * finished turn for the runner (which turn may be replaced) and the API (a run that is over).
 */
export const ENDED_TURN_STATUSES = [...FINAL_TURN_STATUSES, "failed"] as const satisfies readonly TurnStatus[];

/** Whether a turn in `status` is over (`ENDED_TURN_STATUSES`). */
export function hasEnded(status: TurnStatus): boolean {
  return (ENDED_TURN_STATUSES as readonly TurnStatus[]).includes(status);
}

/** Statuses a turn is worked on in, by an attempt holding its conversation's lease; the recovery sweep looks for these once the lease lapsed. */
export const HELD_TURN_STATUSES = ["running"] as const satisfies readonly TurnStatus[];

/** Whether the lifecycle allows `from` to become `to`. */
export function isLegalTransition(from: TurnStatus, to: TurnStatus): boolean {
  return TURN_TRANSITIONS.some((t) => t.from === from && t.to === to);
}

/** The statuses a transition named `by` (a `TurnStore` method) may start from. */
export function statusesBefore(by: TurnTransition["by"]): TurnStatus[] {
  return [...new Set(TURN_TRANSITIONS.filter((t) => t.by === by).map((t) => t.from))];
}
