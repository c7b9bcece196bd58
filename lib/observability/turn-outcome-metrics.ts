/**
 * Counts of what happened to turns, published by the functions (namespace `Threadwise`, dimension
 * `service`, and again with `reason` for the failures), alarmed on and graphed by the stack.
 */
export const TURN_OUTCOME_METRIC_NAMES = {
  /** A turn handed to the worker (asked async, past the API's deadline, or from a channel). */
  queued: "TurnsQueued",
  /** A worker attempt failed and the turn will run again. */
  retried: "TurnsRetried",
  /** The worker stopped trying (a permanent error, or the last receive): the user was told it failed. */
  givenUp: "TurnsGivenUp",
  /** A turn ended failed for its user: given up by the worker, or failed in the API's request. */
  failed: "TurnsFailed",
} as const;

/** Responses of the Slack and Teams webhooks by class, dimension `channel`: a spike of 4xx is a key or signing mismatch. */
export const WEBHOOK_METRIC_NAMES = {
  clientErrors: "WebhookClientErrors",
  serverErrors: "WebhookServerErrors",
} as const;

/**
 * What a deployment's canary watches, counted per function version (dimensions `service`,
 * `function`, `version`: the Lambda function name and the executed version), so the old
 * version's traffic never rolls back the new one. Neither counts what the product answers on
 * purpose: a busy model (`throttled`), the caller's own refusals, or the 503s the functions send
 * when a dependency is down or not configured.
 */
export const VERSION_METRIC_NAMES = {
  /** A turn that failed for its user for a reason a deploy can cause. */
  turnsFailed: "VersionTurnsFailed",
  /** A response of 500 or 502 (not 503) from the api or a webhook. */
  serverErrors: "VersionServerErrors",
} as const;

/** Dimensions of the {@link VERSION_METRIC_NAMES} besides `service`. */
export const FUNCTION_DIMENSION = "function";
export const VERSION_DIMENSION = "version";

/** Reasons of a failed turn that a canary does not count: the model was busy, or the caller was refused. */
export const NOT_DEPLOY_FAILURE_REASONS: ReadonlySet<string> = new Set(["throttled", "conflict", "invalid"]);

/** Whether a response counts against a new version: a server error other than the 503 the product sends on purpose. */
export function isDeployServerError(status: number): boolean {
  return status >= 500 && status !== 503;
}

/** Dimension of the failure metrics that names the {@link TurnFailureReason}. */
export const REASON_DIMENSION = "reason";
/** Dimension of the webhook metrics that names the channel. */
export const CHANNEL_DIMENSION = "channel";
