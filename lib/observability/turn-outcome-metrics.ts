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

/** Dimension of the failure metrics that names the {@link TurnFailureReason}. */
export const REASON_DIMENSION = "reason";
/** Dimension of the webhook metrics that names the channel. */
export const CHANNEL_DIMENSION = "channel";
