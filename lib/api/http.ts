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
}

export interface HttpResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Names the caller of a request, or throws AuthenticationError. */
export type Authenticate = (request: HttpRequest) => Promise<Caller>;

export function json(status: number, payload: unknown, headers: Record<string, string> = {}): HttpResponse {
  return { status, headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(payload) };
}

export function noContent(): HttpResponse {
  return { status: 204, headers: {}, body: "" };
}
