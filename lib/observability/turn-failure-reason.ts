import {
  AuthenticationError,
  ChannelDeliveryError,
  ConflictError,
  ContextBudgetExceededError,
  ModelCallFailedError,
  ModelCallLimitError,
  ModelCredentialsError,
  NotFoundError,
  PayloadTooLargeError,
  ToolError,
  ValidationError,
  type ModelErrorCode,
} from "../errors.js";

/**
 * Why a turn failed, as the `reason` dimension of the turn outcome metrics and the field of the
 * ERROR log of a turn given up (docs/operations.md says what to do about each).
 */
export const TURN_FAILURE_REASONS = [
  "model_denied",
  "throttled",
  "timeout",
  "tool_error",
  "budget",
  "model_error",
  "delivery",
  "conflict",
  "invalid",
  "internal",
] as const;
export type TurnFailureReason = (typeof TURN_FAILURE_REASONS)[number];

/** Reasons that are the caller's doing (refused with a 4xx before anything ran), not a failure of the service. */
export const CALLER_FAILURE_REASONS: ReadonlySet<TurnFailureReason> = new Set(["conflict", "invalid"]);

/** AWS SDK error names of a refused call for capacity (Bedrock's, and the SDK's own after its retries). */
const THROTTLED_ERROR_NAMES = new Set(["ThrottlingException", "ServiceQuotaExceededException", "TooManyRequestsException"]);
/** Names of a call that took too long: Bedrock's model timeout, an aborted request, a socket timeout. */
const TIMEOUT_ERROR_NAMES = new Set(["ModelTimeoutException", "TimeoutError", "AbortError", "RequestTimeout", "RequestTimeoutException"]);
/** Other Bedrock refusals and faults (the model or the service failed, not the caller). */
const MODEL_ERROR_NAMES = new Set([
  "ModelErrorException",
  "ModelNotReadyException",
  "InternalServerException",
  "ServiceUnavailableException",
  "ModelStreamErrorException",
  "ResourceNotFoundException",
  "ValidationException",
]);

/** The reason of each model failure code (`modelCallError` in lib/agent/chat-model.ts). */
const MODEL_CODE_REASONS: Record<ModelErrorCode, TurnFailureReason> = {
  model_busy: "throttled",
  model_unreachable: "model_error",
  model_denied: "model_denied",
  model_not_found: "model_error",
  model_invalid_request: "model_error",
};

const httpStatusOf = (error: unknown): number | undefined => {
  const status = (error as { $metadata?: { httpStatusCode?: unknown } } | null)?.$metadata?.httpStatusCode;
  return typeof status === "number" ? status : undefined;
};

/** The reason of a turn's failure, by error class (and by AWS SDK error name for the model's), never by message text. */
export function turnFailureReason(error: unknown): TurnFailureReason {
  if (error instanceof ModelCredentialsError) return "model_denied";
  if (error instanceof ModelCallFailedError) return MODEL_CODE_REASONS[error.code];
  if (error instanceof ContextBudgetExceededError || error instanceof ModelCallLimitError || error instanceof PayloadTooLargeError) return "budget";
  if (error instanceof ToolError) return "tool_error";
  if (error instanceof ChannelDeliveryError) return "delivery";
  if (error instanceof ConflictError) return "conflict";
  if (error instanceof ValidationError || error instanceof NotFoundError || error instanceof AuthenticationError) return "invalid";
  if (!(error instanceof Error)) return "internal";
  if (THROTTLED_ERROR_NAMES.has(error.name) || httpStatusOf(error) === 429) return "throttled";
  if (TIMEOUT_ERROR_NAMES.has(error.name) || httpStatusOf(error) === 408) return "timeout";
  if (MODEL_ERROR_NAMES.has(error.name)) return "model_error";
  return "internal";
}
