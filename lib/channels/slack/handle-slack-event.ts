import { ChannelAuthenticationError, ValidationError, type ChannelAuthenticationReason } from "../../errors.js";
import { enqueueOnce, type EventDeduper } from "../channel-event-deduper.js";
import { emptyResponse, eventInFlightResponse, jsonResponse, type ChannelRequest, type ChannelResponse } from "../channel-http.js";
import type { EnqueueTurn } from "../../queue/turn-job.js";
import { parseSlackEvent, slackTurnJob, type SlackDelivery, type SlackIgnoreReason } from "./slack-event.js";
import { verifySlackRequest } from "./verify-slack-request.js";

/** What became of one delivery; for logs and metrics (numbers and reasons, never text). */
export type SlackEventOutcome =
  | { kind: "rejected"; reason: ChannelAuthenticationReason }
  | { kind: "invalid" }
  | { kind: "challenge" }
  | { kind: "ignored"; reason: SlackIgnoreReason }
  | { kind: "duplicate"; retryNum: number }
  | { kind: "in_flight"; retryNum: number }
  | { kind: "enqueued"; retryNum: number };

export interface HandleSlackEventInput {
  request: ChannelRequest;
  signingSecret: string;
  deduper: EventDeduper;
  enqueue: EnqueueTurn;
  /** Default: the bot users named in each envelope's `authorizations`. */
  botUserId?: string;
  /** Default: the current time. */
  now?: Date;
  onOutcome?: (outcome: SlackEventOutcome) => void;
}

/**
 * Verifies, parses, dedupes and enqueues one Events API delivery, and returns the answer for
 * Slack. It does no model work, so it answers well within Slack's three seconds.
 *
 * A failure to enqueue releases the dedupe claim and is rethrown: the adapter answers 5xx and
 * Slack's retry gets a fresh chance.
 */
export async function handleSlackEvent(input: HandleSlackEventInput): Promise<ChannelResponse> {
  const report = input.onOutcome ?? (() => undefined);
  const now = input.now ?? new Date();
  try {
    verifySlackRequest({ ...input.request, signingSecret: input.signingSecret, now });
  } catch (error) {
    if (!(error instanceof ChannelAuthenticationError)) throw error;
    report({ kind: "rejected", reason: error.reason });
    return jsonResponse(401, { error: { code: "unauthenticated", message: "invalid slack signature" } });
  }

  let delivery: SlackDelivery;
  try {
    delivery = parseSlackEvent(input.request.rawBody, { botUserId: input.botUserId });
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    report({ kind: "invalid" });
    // A body we cannot read will not read better on a retry.
    const response = jsonResponse(400, { error: { code: "invalid_request", message: error.message } });
    response.headers["x-slack-no-retry"] = "1";
    return response;
  }

  if (delivery.kind === "url_verification") {
    report({ kind: "challenge" });
    return jsonResponse(200, { challenge: delivery.challenge });
  }
  if (delivery.kind === "ignore") {
    report({ kind: "ignored", reason: delivery.reason });
    return emptyResponse(200);
  }

  const retryNum = Number(input.request.headers["x-slack-retry-num"] ?? 0) || 0;
  const job = slackTurnJob(delivery.message, now);
  const kind = await enqueueOnce(job, input.deduper, input.enqueue, now);
  report({ kind, retryNum });
  return kind === "in_flight" ? eventInFlightResponse() : emptyResponse(200);
}
