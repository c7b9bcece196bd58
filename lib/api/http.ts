import { once } from "node:events";
import type { Writable } from "node:stream";
import type { Caller } from "../auth/principal.js";

/** A request as every adapter (local server, Lambda) hands it to the router. */
export interface HttpRequest {
  method: string;
  path: string;
  /** Lowercase header names. */
  headers: Record<string, string | undefined>;
  query: Record<string, string | undefined>;
  /** The raw body, already base64-decoded by the adapter. */
  body?: string;
  /** Set by an adapter that writes `HttpResponse.stream` as it comes (the local server, a streaming function). */
  canStream?: boolean;
}

export interface HttpResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
  /**
   * A body written piece by piece after the headers, instead of `body` (server-sent events). The
   * adapter aborts `signal` when the client goes away; the stream then ends, and nothing else does.
   */
  stream?: (signal: AbortSignal) => AsyncIterable<string>;
  /**
   * Work the request started that may outlast its response (a streamed turn whose client went
   * away); it never rejects. An adapter whose process may be frozen once it has answered (Lambda)
   * waits for it before it returns.
   */
  settled?: Promise<void>;
}

/**
 * The exact body text of an API Gateway event; undefined when it has none. Signatures are
 * computed over the bytes the client sent, so a base64-encoded body is decoded, never re-serialised.
 */
export function decodeEventBody(event: { body?: string | null; isBase64Encoded?: boolean }): string | undefined {
  if (event.body === undefined || event.body === null) return undefined;
  return event.isBase64Encoded ? Buffer.from(event.body, "base64").toString("utf8") : event.body;
}

/** Header names lowercased, multi-value headers joined as HTTP does: what every adapter hands the router. */
export function lowercaseHeaders(headers: Record<string, string | string[] | undefined> | null | undefined): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(headers ?? {})) out[name.toLowerCase()] = Array.isArray(value) ? value.join(", ") : value;
  return out;
}

/** Names the caller of a request, or throws AuthenticationError. */
export type Authenticate = (request: HttpRequest) => Promise<Caller>;

export function json(status: number, payload: unknown, headers: Record<string, string> = {}): HttpResponse {
  return { status, headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(payload) };
}

export function noContent(): HttpResponse {
  return { status: 204, headers: {}, body: "" };
}

/**
 * Writes a streamed body to `out` piece by piece, waiting for `drain` when it is full, until the
 * stream ends or `gone` aborts (the client went away: the writing stops, nothing else does).
 */
export async function pipeResponseStream(out: Writable, stream: NonNullable<HttpResponse["stream"]>, gone: AbortSignal): Promise<void> {
  try {
    for await (const piece of stream(gone)) {
      if (gone.aborted) break;
      if (!out.write(piece)) await once(out, "drain", { signal: gone });
    }
  } catch (error) {
    if (!gone.aborted) throw error;
  }
}
