/** A webhook request as the adapters hand it over: header names lowercase, body as the exact bytes sent (UTF-8). */
export interface ChannelRequest {
  headers: Record<string, string | undefined>;
  rawBody: string;
}

/** What to answer the channel; the adapter writes it out unchanged. */
export interface ChannelResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export function jsonResponse(status: number, body: unknown): ChannelResponse {
  return { status, headers: { "content-type": "application/json" }, body: JSON.stringify(body) };
}

export function emptyResponse(status: number): ChannelResponse {
  return { status, headers: {}, body: "" };
}

/**
 * The answer of a webhook whose channel has no credentials: 503, so the channel retries once it
 * is configured, and a message that says what to set.
 */
export function channelNotConfiguredResponse(channel: "slack" | "teams", hint: string): ChannelResponse {
  return jsonResponse(503, { error: { code: "channel_not_configured", message: `${channel} is not configured: ${hint}` } });
}

/**
 * The answer to a delivery of an event whose first delivery is still enqueueing it: 503, so the
 * channel retries; that first delivery may yet fail, and a 200 would end the channel's retries.
 */
export function eventInFlightResponse(): ChannelResponse {
  return jsonResponse(503, { error: { code: "event_in_flight", message: "an earlier delivery of this event is still being accepted; retry later" } });
}
