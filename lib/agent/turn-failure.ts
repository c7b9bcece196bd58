import {
  BudgetExhaustedError,
  ContextBudgetExceededError,
  ModelCallFailedError,
  ModelCallLimitError,
  ModelCredentialsError,
  RateLimitedError,
} from "../errors.js";
import { isMongoUnavailable } from "../store/mongo-unavailable.js";
import type { TurnFailureCode } from "../store/turn-lifecycle.js";

/** A failed turn's code (`TURN_FAILURE_CODES`, docs/api.md "Failure codes"), as the API's error body says it. */
function errorCode(error: unknown): TurnFailureCode {
  if (error instanceof ModelCallFailedError) return error.code;
  if (error instanceof ModelCallLimitError) return "model_call_limit";
  if (error instanceof ModelCredentialsError) return "model_credentials";
  if (error instanceof BudgetExhaustedError) return "budget_exhausted";
  if (error instanceof RateLimitedError) return "rate_limited";
  if (error instanceof ContextBudgetExceededError) return "context_budget_exceeded";
  if (isMongoUnavailable(error)) return "service_unavailable";
  return "internal_error";
}

/**
 * How a turn that failed on `error` is recorded and told: its code, and a message that says why
 * only where the reason is the user's to know (a limit reached, and when it resets; a model's
 * failure; the database away), never an internal error's text.
 */
export function turnFailure(error: unknown): { code: TurnFailureCode; message: string } {
  const limited = error instanceof BudgetExhaustedError || error instanceof RateLimitedError;
  const message = limited
    ? error.message
    : error instanceof ModelCallFailedError
      ? `the turn failed: ${error.reason}`
      : isMongoUnavailable(error)
        ? "the turn failed: the database was unreachable"
        : "the turn failed";
  return { code: errorCode(error), message };
}
