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
}

/** Names the caller of a request, or throws AuthenticationError. */
export type Authenticate = (request: HttpRequest) => Promise<Caller>;

export function json(status: number, payload: unknown, headers: Record<string, string> = {}): HttpResponse {
  return { status, headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(payload) };
}

export function noContent(): HttpResponse {
  return { status: 204, headers: {}, body: "" };
}
