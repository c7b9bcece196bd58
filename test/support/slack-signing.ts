import { createHmac } from "node:crypto";

/** The signing secret the tests' Slack app has; Slack shows one like it on the app's Basic Information page. */
export const TEST_SLACK_SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5";

/**
 * Headers Slack sends with an Events API request, signed as Slack documents it: `v0=` and the
 * hex HMAC-SHA256, keyed by the signing secret, of `v0:{timestamp}:{raw body}`. Written here
 * independently of lib/, so the tests do not check the code against itself.
 */
export function signSlackRequest(
  rawBody: string,
  options: {
    secret?: string;
    at?: Date;
    /** The `X-Slack-Request-Timestamp` value verbatim, signed as given (to make malformed ones). Default: `at` in seconds. */
    timestamp?: string;
    retryNum?: number;
  } = {},
): Record<string, string> {
  const timestamp = options.timestamp ?? String(Math.floor((options.at ?? new Date()).getTime() / 1000));
  const mac = createHmac("sha256", options.secret ?? TEST_SLACK_SIGNING_SECRET)
    .update(`v0:${timestamp}:${rawBody}`)
    .digest("hex");
  const headers: Record<string, string> = {
    "content-type": "application/json",
    "x-slack-request-timestamp": timestamp,
    "x-slack-signature": `v0=${mac}`,
  };
  if (options.retryNum !== undefined) {
    headers["x-slack-retry-num"] = String(options.retryNum);
    headers["x-slack-retry-reason"] = "http_timeout";
  }
  return headers;
}
