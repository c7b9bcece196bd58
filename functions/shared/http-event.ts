import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { decodeEventBody, lowercaseHeaders, type Authenticate, type HttpRequest, type HttpResponse } from "../../lib/api/http.js";
import { callerFromClaims, type ClaimNames } from "../../lib/auth/index.js";
import { AuthenticationError } from "../../lib/errors.js";

/** An HTTP API (payload 2.0) event; `authorizer.jwt` is there on routes behind the JWT authorizer. */
export type HttpApiEvent = APIGatewayProxyEventV2 & {
  requestContext: { authorizer?: { jwt?: { claims: Record<string, string | number | boolean | string[]> } } };
};

/** The framework-neutral request of lib/api: lowercase headers, the body decoded from base64 if it came so. */
export function toHttpRequest(event: HttpApiEvent): HttpRequest {
  const headers = lowercaseHeaders(event.headers);
  if (event.cookies?.length) headers.cookie = event.cookies.join("; ");
  return { method: event.requestContext.http.method, path: event.rawPath, headers, query: { ...event.queryStringParameters }, body: decodeEventBody(event) };
}

export function toResult(response: { status: number; headers: Record<string, string>; body: string }): APIGatewayProxyStructuredResultV2 {
  return { statusCode: response.status, headers: response.headers, body: response.body, isBase64Encoded: false };
}

/**
 * API Gateway has verified the JWT (signature, issuer, audience, expiry) before the function
 * runs, and hands over its claims; array claims arrive flattened as "[a b]" and are read back as
 * lists, which `callerFromClaims` accepts for the roles claim only (a tenant shaped "[…]" is a 401).
 * The request object carries them to `authenticate` without a header a client could forge.
 */
export class VerifiedClaims {
  private readonly claims = new WeakMap<HttpRequest, Record<string, unknown>>();

  constructor(private readonly names: ClaimNames) {}

  attach(request: HttpRequest, event: HttpApiEvent): HttpRequest {
    const raw = event.requestContext.authorizer?.jwt?.claims;
    if (raw) {
      const claims: Record<string, unknown> = {};
      for (const [key, value] of Object.entries(raw)) {
        claims[key] = typeof value === "string" && /^\[.*\]$/.test(value) ? value.slice(1, -1).split(" ").filter(Boolean) : value;
      }
      this.claims.set(request, claims);
    }
    return request;
  }

  readonly authenticate: Authenticate = async (request) => {
    const claims = this.claims.get(request);
    if (!claims) throw new AuthenticationError("no verified token");
    return callerFromClaims(claims, this.names);
  };
}

export type { HttpResponse };
