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

/**
 * The exact body text of an API Gateway / Lambda URL event. Signatures are computed over the
 * bytes the channel sent, so a base64-encoded body must be decoded before verification, never
 * re-serialised.
 */
export function decodeGatewayBody(event: { body?: string | null; isBase64Encoded?: boolean }): string {
  if (event.body === undefined || event.body === null) return "";
  return event.isBase64Encoded ? Buffer.from(event.body, "base64").toString("utf8") : event.body;
}

/** Header names lowercased, multi-value headers joined as HTTP does; for adapters that do not normalise. */
export function lowercaseHeaders(
  headers: Record<string, string | string[] | undefined> | null | undefined,
): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    out[name.toLowerCase()] = Array.isArray(value) ? value.join(", ") : value;
  }
  return out;
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
