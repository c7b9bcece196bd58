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
  | "not_endorsed";

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
