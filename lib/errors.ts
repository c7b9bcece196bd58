/**
 * One root error for the product. Subclasses set `name`, keep `cause`, and carry typed
 * context; the HTTP status of each is mapped in one place (`lib/api/error-response.ts`).
 */
export class ThreadwiseError extends Error {
  override name = "ThreadwiseError";
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/** The request is malformed or fails validation. */
export class ValidationError extends ThreadwiseError {
  override name = "ValidationError";
  constructor(
    message: string,
    readonly details?: { path: string; message: string }[],
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** The request body is larger than the documented limit. */
export class PayloadTooLargeError extends ThreadwiseError {
  override name = "PayloadTooLargeError";
  constructor(
    message: string,
    readonly limit: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** No, or an invalid, credential. */
export class AuthenticationError extends ThreadwiseError {
  override name = "AuthenticationError";
}

/** Unknown resource, or one the caller may not see (answered alike, so existence does not leak). */
export class NotFoundError extends ThreadwiseError {
  override name = "NotFoundError";
}

/** The route exists but not with this method. */
export class MethodNotAllowedError extends ThreadwiseError {
  override name = "MethodNotAllowedError";
  constructor(
    message: string,
    readonly allowed: string[],
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** The response cannot be given in the form the request accepts (an event stream where this endpoint cannot stream). */
export class NotAcceptableError extends ThreadwiseError {
  override name = "NotAcceptableError";
}

/** The body is not JSON. */
export class UnsupportedMediaTypeError extends ThreadwiseError {
  override name = "UnsupportedMediaTypeError";
}

/** A turn is already running on the conversation, or an idempotent request is still in progress. */
export class ConflictError extends ThreadwiseError {
  override name = "ConflictError";
  constructor(
    message: string,
    readonly retryAfterSeconds?: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** A dependency (MongoDB, the model) is unavailable; the caller may retry. */
export class ServiceUnavailableError extends ThreadwiseError {
  override name = "ServiceUnavailableError";
  constructor(
    message: string,
    readonly retryAfterSeconds = 5,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * A channel user's group memberships could not be read (Slack user groups, Entra groups), so their
 * roles are unknown: the turn waits and retries rather than run with fewer roles than configured.
 */
export class RoleLookupError extends ServiceUnavailableError {
  override name = "RoleLookupError";
  constructor(
    message: string,
    readonly channel: "slack" | "teams",
    options?: ErrorOptions,
  ) {
    super(message, 30, options);
  }
}

/**
 * The model cannot be called with what this process has: no AWS credentials for Bedrock, or
 * credentials Bedrock refuses. The message says what to do; the turn's stored error names it.
 */
export class ModelCredentialsError extends ThreadwiseError {
  override name = "ModelCredentialsError";
}

/** The model view cannot be made to fit the total budget, even after every reduction. */
export class ContextBudgetExceededError extends ThreadwiseError {
  override name = "ContextBudgetExceededError";
  constructor(
    message: string,
    readonly budget: number,
    readonly tokens: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** A model view breaks a Bedrock Converse rule; sending it would be rejected. */
export class InvalidModelViewError extends ThreadwiseError {
  override name = "InvalidModelViewError";
  constructor(
    message: string,
    readonly rule: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** A document would exceed the configured size limit. */
export class DocumentTooLargeError extends ThreadwiseError {
  override name = "DocumentTooLargeError";
  constructor(
    message: string,
    readonly bytes: number,
    readonly limit: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** Options of {@link StaleWriterError}: the thread's fence when the write was refused. */
export interface StaleWriterErrorOptions extends ErrorOptions {
  currentEpoch?: number;
}

/**
 * A write by a writer that no longer holds the thread: a later writer raised the thread's fence
 * epoch (its lease was taken over) or the thread was deleted. Nothing of the refused write is
 * visible to readers; the writer must stop.
 */
export class StaleWriterError extends ConflictError {
  override name = "StaleWriterError";
  /** The thread's fence epoch when the write was refused; undefined when the thread has no fence (deleted). */
  readonly currentEpoch?: number;
  constructor(
    message: string,
    readonly threadId: string,
    /** The epoch the refused writer wrote under. */
    readonly epoch?: number,
    options?: StaleWriterErrorOptions,
  ) {
    super(message, undefined, options);
    this.currentEpoch = options?.currentEpoch;
  }
}

/**
 * A checkpoint that a run or write starts from does not exist (it was pruned, deleted, or never
 * written). Nothing was written: starting from an empty state instead would replace the thread's state.
 */
export class CheckpointNotFoundError extends NotFoundError {
  override name = "CheckpointNotFoundError";
  constructor(
    message: string,
    readonly threadId: string,
    readonly checkpointNs: string,
    readonly checkpointId: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** A channel value of a thread's checkpoints, at one version, cannot be read or written as it must be. */
export class ChannelValueError extends ThreadwiseError {
  override name = "ChannelValueError";
  constructor(
    message: string,
    readonly threadId: string,
    readonly channel: string,
    readonly version: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * A stored checkpoint names a channel value that is not in storage (a value, a list link or a
 * version it builds on). Reading it would return a state that was never written, so it is refused.
 */
export class ChannelValueMissingError extends ChannelValueError {
  override name = "ChannelValueMissingError";
}

/** Two different values were written under one channel version; the first is kept and the second refused. */
export class ChannelVersionConflictError extends ChannelValueError {
  override name = "ChannelVersionConflictError";
}

/** A tool refused or failed; the model sees the message as a tool error. */
export class ToolError extends ThreadwiseError {
  override name = "ToolError";
  constructor(
    message: string,
    readonly toolName: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** Why a Slack or Teams request was refused; tests and logs branch on it, never on message text. */
export type ChannelAuthenticationReason =
  | "missing"
  | "malformed"
  | "bad_signature"
  | "expired"
  | "wrong_issuer"
  | "wrong_audience"
  | "wrong_service_url"
  | "not_endorsed"
  /** A Bot Framework activity from another channel than Teams (Web Chat, Direct Line, …). */
  | "wrong_channel"
  /** A verified activity that names no Entra user and tenant (`lib/channels/teams/teams-identity.ts`). */
  | "no_identity";

/** A Slack signature or Bot Framework token is missing or does not verify. Answered as 401. */
export class ChannelAuthenticationError extends AuthenticationError {
  override name = "ChannelAuthenticationError";
  constructor(
    message: string,
    readonly reason: ChannelAuthenticationReason,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** A reply could not be delivered to Slack or Teams; `status` is the upstream HTTP status when there was one. */
export class ChannelDeliveryError extends ThreadwiseError {
  override name = "ChannelDeliveryError";
  constructor(
    message: string,
    readonly channel: "slack" | "teams",
    readonly status?: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** An Idempotency-Key was reused with a different request body. */
export class IdempotencyKeyReusedError extends ThreadwiseError {
  override name = "IdempotencyKeyReusedError";
}

/** A conflict about one turn, which `turnId` names. */
export class TurnConflictError extends ConflictError {
  override name = "TurnConflictError";
  constructor(
    message: string,
    readonly turnId: string,
    options?: ErrorOptions,
  ) {
    super(message, undefined, options);
  }
}

/**
 * A retried turn that is no longer its conversation's latest: later turns ran meanwhile, so it
 * cannot be answered without answering out of order. Its question is kept in the record.
 */
export class TurnSupersededError extends TurnConflictError {
  override name = "TurnSupersededError";
}

/** A turn needed more model calls than its cap; retrying cannot help, the same question would loop again. */
export class ModelCallLimitError extends ThreadwiseError {
  override name = "ModelCallLimitError";
  constructor(
    message: string,
    readonly limit: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** Only the conversation's latest finished turn can be edited or regenerated; this one is not (or a turn is still under way). */
export class NotLatestTurnError extends TurnConflictError {
  override name = "NotLatestTurnError";
}

/** The caller is who they say, but may not do this (approve a call reserved to the requester or to a role). */
export class ForbiddenError extends ThreadwiseError {
  override name = "ForbiddenError";
}

/** Where an approval stands: what a decision on it met. */
export type ApprovalStanding = "pending" | "approved" | "edited" | "rejected" | "expired" | "superseded";

/** A decision on an approval that cannot be taken; `status` is the approval's, which the decision did not change. */
export class ApprovalDecisionError extends ThreadwiseError {
  override name = "ApprovalDecisionError";
  constructor(
    message: string,
    readonly approvalId: string,
    readonly status: ApprovalStanding,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** The approval was already decided otherwise; the first decision stands. */
export class ApprovalConflictError extends ApprovalDecisionError {
  override name = "ApprovalConflictError";
}

/** A newer turn began in the conversation: the call waiting for this approval will never run. */
export class ApprovalSupersededError extends ApprovalDecisionError {
  override name = "ApprovalSupersededError";
}

/** Nobody decided before the approval's deadline; the call was rejected as expired and the model told so. */
export class ApprovalExpiredError extends ApprovalDecisionError {
  override name = "ApprovalExpiredError";
}

/** Why a model call failed, as a turn's stored error code names it. */
export const MODEL_ERROR_CODES = ["model_busy", "model_unreachable", "model_denied", "model_not_found", "model_invalid_request"] as const;
export type ModelErrorCode = (typeof MODEL_ERROR_CODES)[number];

/**
 * A model call failed for a reason the caller can name: the provider is throttling or not ready
 * (`model_busy`, retried later), unreachable, refusing this identity, without the model, or
 * rejecting the request. `reason` is one line, without message contents.
 */
export class ModelCallFailedError extends ThreadwiseError {
  override name = "ModelCallFailedError";
  constructor(
    message: string,
    readonly code: ModelErrorCode,
    readonly reason: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** The model is throttling or not ready: 503 `model_busy` with `Retry-After`; the worker retries with backoff. */
export class ModelBusyError extends ModelCallFailedError {
  override name = "ModelBusyError";
  constructor(
    message: string,
    reason: string,
    readonly retryAfterSeconds = 10,
    options?: ErrorOptions,
  ) {
    super(message, "model_busy", reason, options);
  }
}

/** Too many requests for a rate limit (turns per minute, concurrent turns or streams): 429 `rate_limited` with `Retry-After`. */
export class RateLimitedError extends ThreadwiseError {
  override name = "RateLimitedError";
  constructor(
    message: string,
    /** The limit's name, as configuration and the admin API spell it. */
    readonly limit: string,
    readonly retryAfterSeconds: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** A budget (tokens per day, spend per month) is used up: 429 `budget_exhausted`, naming the limit and when it resets. */
export class BudgetExhaustedError extends ThreadwiseError {
  override name = "BudgetExhaustedError";
  constructor(
    message: string,
    readonly limit: string,
    readonly resetsAt: Date,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** Why an MCP sign-in's callback was refused (docs/mcp-oauth.md). */
export const MCP_SIGN_IN_FAILURES = ["sign_in_unknown", "sign_in_expired", "sign_in_denied", "sign_in_failed"] as const;
export type McpSignInFailure = (typeof MCP_SIGN_IN_FAILURES)[number];

/**
 * An MCP sign-in's callback that finishes nothing: 400 with its `code`. `sign_in_unknown` is a
 * state never issued or already used (a replay), `sign_in_expired` one past its time, `sign_in_denied`
 * the user or the authorization server said no, `sign_in_failed` the code exchange was refused.
 */
export class McpSignInError extends ThreadwiseError {
  override name = "McpSignInError";
  constructor(
    message: string,
    readonly code: McpSignInFailure,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * Why a stored content field was not read (docs/security.md, "Contents at rest"): `plaintext` a
 * clear value where ciphertext is expected, `moved` a ciphertext written for another document,
 * field, collection or tenant, `undecryptable` no key of the tenant opens it (shredded, or not its
 * tenant's), `encryption_off` a ciphertext read by a deployment whose encryption is off.
 */
export const CONTENT_REFUSALS = ["plaintext", "moved", "undecryptable", "encryption_off"] as const;
export type ContentRefusal = (typeof CONTENT_REFUSALS)[number];

/** A stored content field refused rather than read: 500 with `content_refused` and the reason. Never carries the content. */
export class ContentRefusedError extends ThreadwiseError {
  override name = "ContentRefusedError";
  constructor(
    message: string,
    readonly reason: ContentRefusal,
    readonly collection: string,
    readonly field: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** Content encryption is on and no key source can be had: start-up stops and says which setting to give. */
export class ContentKeysUnavailableError extends ThreadwiseError {
  override name = "ContentKeysUnavailableError";
}

/** The database's schema version is newer than this release's migrations (set up by a later release), or the migrations are misnumbered. */
export class SchemaVersionError extends ThreadwiseError {
  override name = "SchemaVersionError";
}

/**
 * A member a conversation cannot have (docs/api.md, "Members"): 422 `member_outside_tenant`.
 * Members are API users of the owner's own issuer and tenant; nothing is changed.
 */
export class MemberOutsideTenantError extends ThreadwiseError {
  override name = "MemberOutsideTenantError";
}

/** A key operation (rotation) asked of a deployment that stores contents clear (`CONTENT_ENCRYPTION=off`): 409 `content_encryption_off`, nothing changed. */
export class ContentEncryptionOffError extends ThreadwiseError {
  override name = "ContentEncryptionOffError";
}
