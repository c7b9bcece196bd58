import { createHmac, timingSafeEqual } from "node:crypto";
import { ChannelAuthenticationError } from "../../errors.js";
import type { ChannelRequest } from "../channel-http.js";

/** Slack's replay window: a request whose timestamp is further than this from now is refused. */
export const DEFAULT_SLACK_MAX_SKEW_SECONDS = 5 * 60;

/** The only signature version Slack sends. */
const SIGNATURE_VERSION = "v0";

export interface VerifySlackRequestInput extends ChannelRequest {
  signingSecret: string;
  /** Default: the current time. */
  now?: Date;
  /** Default: {@link DEFAULT_SLACK_MAX_SKEW_SECONDS}. */
  maxSkewSeconds?: number;
}

/** `v0=` + hex HMAC-SHA256 of `v0:{timestamp}:{body}`: the value Slack puts in `X-Slack-Signature`. */
export function computeSlackSignature(signingSecret: string, timestamp: string, rawBody: string): string {
  const mac = createHmac("sha256", signingSecret).update(`${SIGNATURE_VERSION}:${timestamp}:${rawBody}`).digest("hex");
  return `${SIGNATURE_VERSION}=${mac}`;
}

/**
 * Checks `X-Slack-Signature` over the raw body and the timestamp window, as Slack documents.
 * Throws `ChannelAuthenticationError` (reason `missing`, `malformed`, `expired` or `bad_signature`).
 */
export function verifySlackRequest(input: VerifySlackRequestInput): void {
  const signature = input.headers["x-slack-signature"];
  const timestamp = input.headers["x-slack-request-timestamp"];
  if (!signature || !timestamp) {
    throw new ChannelAuthenticationError("slack signature headers missing", "missing");
  }
  if (!/^\d{1,12}$/.test(timestamp)) {
    throw new ChannelAuthenticationError("slack request timestamp malformed", "malformed");
  }
  const nowSeconds = Math.floor((input.now ?? new Date()).getTime() / 1000);
  const maxSkew = input.maxSkewSeconds ?? DEFAULT_SLACK_MAX_SKEW_SECONDS;
  // Both directions: a timestamp from the future is as replayable as one from the past.
  if (Math.abs(nowSeconds - Number(timestamp)) > maxSkew) {
    throw new ChannelAuthenticationError("slack request timestamp outside the window", "expired");
  }
  // Stryker disable next-line StringLiteral: Buffer.from reads "" as its default encoding, which is utf8
  const expected = Buffer.from(computeSlackSignature(input.signingSecret, timestamp, input.rawBody), "utf8");
  // Stryker disable next-line StringLiteral: as above
  const given = Buffer.from(signature, "utf8");
  // timingSafeEqual throws on unequal lengths; a length mismatch says nothing about the secret.
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw new ChannelAuthenticationError("slack signature does not match", "bad_signature");
  }
}
