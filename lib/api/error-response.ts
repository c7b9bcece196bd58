import {
  ApprovalConflictError,
  ApprovalExpiredError,
  ApprovalSupersededError,
  AuthenticationError,
  BudgetExhaustedError,
  ConflictError,
  ContentEncryptionOffError,
  ContentRefusedError,
  ContextBudgetExceededError,
  ForbiddenError,
  IdempotencyKeyReusedError,
  McpSignInError,
  MemberOutsideTenantError,
  MethodNotAllowedError,
  ModelBusyError,
  ModelCallFailedError,
  ModelCredentialsError,
  ModelCallLimitError,
  NotFoundError,
  NotAcceptableError,
  NotLatestTurnError,
  PayloadTooLargeError,
  RateLimitedError,
  ServiceUnavailableError,
  TurnSupersededError,
  UnsupportedMediaTypeError,
  ValidationError,
} from "../errors.js";
import { json, type HttpResponse } from "./http.js";
import { isMongoUnavailable } from "../store/mongo-unavailable.js";

/** Seconds a client is asked to wait when MongoDB is unreachable. */
export const DEFAULT_UNAVAILABLE_RETRY_AFTER_S = 5;

/** The one place where errors become HTTP statuses. Unknown errors are 500 with no detail. */
export function errorResponse(error: unknown): HttpResponse {
  const body = (code: string, message: string, extra: Record<string, unknown> = {}) => ({ error: { code, message, ...extra } });
  if (error instanceof ValidationError) return json(400, body("invalid_request", error.message, error.details ? { details: error.details } : {}));
  if (error instanceof McpSignInError) return json(400, body(error.code, error.message));
  if (error instanceof AuthenticationError) return json(401, body("unauthorized", error.message), { "www-authenticate": "Bearer" });
  if (error instanceof ForbiddenError) return json(403, body("forbidden", error.message));
  if (error instanceof NotFoundError) return json(404, body("not_found", error.message));
  if (error instanceof MethodNotAllowedError) return json(405, body("method_not_allowed", error.message), { allow: error.allowed.join(", ") });
  if (error instanceof NotAcceptableError) return json(406, body("not_acceptable", error.message));
  if (error instanceof TurnSupersededError) return json(409, body("turn_superseded", error.message, { turnId: error.turnId }));
  if (error instanceof NotLatestTurnError) return json(409, body("turn_not_latest", error.message, { turnId: error.turnId }));
  if (error instanceof ApprovalConflictError)
    return json(409, body("approval_conflict", error.message, { approvalId: error.approvalId, status: error.status }));
  if (error instanceof ApprovalSupersededError) {
    return json(409, body("approval_superseded", error.message, { approvalId: error.approvalId, status: error.status }));
  }
  if (error instanceof ApprovalExpiredError) return json(410, body("approval_expired", error.message, { approvalId: error.approvalId, status: error.status }));
  if (error instanceof ContentEncryptionOffError) return json(409, body("content_encryption_off", error.message));
  if (error instanceof ConflictError) {
    return json(409, body("conflict", error.message), error.retryAfterSeconds ? { "retry-after": String(error.retryAfterSeconds) } : {});
  }
  if (error instanceof PayloadTooLargeError) return json(413, body("payload_too_large", error.message, { limit: error.limit }));
  if (error instanceof UnsupportedMediaTypeError) return json(415, body("unsupported_media_type", error.message));
  if (error instanceof IdempotencyKeyReusedError) return json(422, body("idempotency_key_reused", error.message));
  if (error instanceof MemberOutsideTenantError) return json(422, body("member_outside_tenant", error.message));
  if (error instanceof ContextBudgetExceededError) {
    return json(422, body("context_budget_exceeded", error.message, { budget: error.budget, tokens: error.tokens }));
  }
  if (error instanceof ModelCallLimitError) return json(422, body("model_call_limit", error.message, { limit: error.limit }));
  if (error instanceof RateLimitedError) {
    return json(429, body("rate_limited", error.message, { limit: error.limit }), { "retry-after": String(error.retryAfterSeconds) });
  }
  if (error instanceof BudgetExhaustedError) {
    const retryAfter = Math.max(1, Math.ceil((error.resetsAt.getTime() - Date.now()) / 1000));
    return json(429, body("budget_exhausted", error.message, { limit: error.limit, resetsAt: error.resetsAt.toISOString() }), {
      "retry-after": String(retryAfter),
    });
  }
  if (error instanceof ContentRefusedError) return json(500, body("content_refused", error.message, { reason: error.reason }));
  if (error instanceof ModelCredentialsError) return json(503, body("model_credentials", error.message));
  if (error instanceof ModelBusyError) {
    return json(503, body("model_busy", error.message, { reason: error.reason }), { "retry-after": String(error.retryAfterSeconds) });
  }
  if (error instanceof ModelCallFailedError) return json(502, body(error.code, error.message, { reason: error.reason }));
  if (error instanceof ServiceUnavailableError) {
    return json(503, body("service_unavailable", error.message), { "retry-after": String(error.retryAfterSeconds) });
  }
  if (isMongoUnavailable(error)) {
    return json(503, body("service_unavailable", "the database is unreachable; retry shortly"), {
      "retry-after": String(DEFAULT_UNAVAILABLE_RETRY_AFTER_S),
    });
  }
  return json(500, body("internal_error", "internal error"));
}
