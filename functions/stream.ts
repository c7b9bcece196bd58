import type { Context, LambdaFunctionURLEvent } from "aws-lambda";
import type { App } from "../lib/app.js";
import { errorResponse } from "../lib/api/error-response.js";
import { wantsEventStream } from "../lib/api/event-stream.js";
import type { HttpRequest, HttpResponse } from "../lib/api/http.js";
import { createHttpHandler } from "../lib/api/http-handler.js";
import { JwtVerifier, OpenIdKeySource, type Caller } from "../lib/auth/index.js";
import type { AuthConfig } from "../lib/config/auth-config.js";
import { AuthenticationError, NotAcceptableError, NotFoundError, ValidationError } from "../lib/errors.js";
import { appFor } from "./shared/app-runtime.js";
import { toHttpRequest } from "./shared/http-event.js";
import { streamifyResponse, writeResponseStream, type ResponseStream } from "./shared/response-stream.js";
import { config, credentialsOf, logger, logServerError, publishTurnFailed, publishTurnMetrics, turnQueue, withRuntime } from "./shared/runtime.js";

/** The two `/v1` routes this function serves, both event streams (docs/streaming.md); the other `/v1` routes are the HTTP API's. */
const STREAM_ROUTES = [
  { method: "POST", pattern: /^\/v1\/conversations\/[^/]+\/messages\/?$/ },
  { method: "GET", pattern: /^\/v1\/conversations\/[^/]+\/turns\/[^/]+\/events\/?$/ },
];
/** The Agent Protocol's routes, JSON and streams alike: an SDK client has one `apiUrl` (docs/agent-protocol.md). */
const PROTOCOL_ROUTES = /^\/(threads|assistants)(\/|$)/;

/**
 * The HTTP API's JWT authorizer, in the function: the same issuer and audiences (the stack gives
 * both the stage's `jwtIssuer` and `jwtAudience`, the audiences comma-joined), and the keys the
 * issuer's OpenID metadata names, found as API Gateway finds them, unless `JWT_JWKS_URL` names them.
 */
function apiTokenVerifier(auth: AuthConfig): JwtVerifier {
  if (!auth.issuer) throw new ValidationError("JWT_ISSUER is not set", [{ path: "JWT_ISSUER", message: "required" }]);
  const metadataUrl = `${auth.issuer.replace(/\/+$/, "")}/.well-known/openid-configuration`;
  return new JwtVerifier({
    issuer: auth.issuer,
    audience: auth.audience.split(",").map((a) => a.trim()),
    key: auth.jwksUrl ? new URL(auth.jwksUrl) : new OpenIdKeySource(metadataUrl),
    tenantClaim: auth.tenantClaim,
    rolesClaim: auth.rolesClaim,
    requireTenant: auth.requireTenant,
  });
}

const verifier = apiTokenVerifier(config.auth);
/**
 * The bearer token's header behind CloudFront (`streamCdn`, docs/deploying.md): origin access
 * control signs each request with SigV4 in `Authorization`, overwriting the caller's, so the
 * caller sends `x-threadwise-authorization: Bearer <JWT>` instead. Verified as `Authorization` is.
 */
const STREAM_TOKEN_HEADER = "x-threadwise-authorization";
/** Each request's caller, verified before the app is touched, handed to the routes by the request object. */
const callers = new WeakMap<HttpRequest, Caller>();
const authenticate = async (request: HttpRequest): Promise<Caller> => {
  const caller = callers.get(request);
  if (!caller) throw new AuthenticationError("no verified token");
  return caller;
};
const handlers = new WeakMap<App, (request: HttpRequest) => Promise<HttpResponse>>();

function handlerFor(app: App) {
  let handle = handlers.get(app);
  if (!handle) {
    handle = createHttpHandler(app, config, { authenticate, onError: logServerError });
    handlers.set(app, handle);
  }
  return handle;
}

/**
 * Route, token, then `Accept`, in that order, before the app (and MongoDB) is touched: a request
 * that is not a stream this URL serves, or carries no valid token, runs nothing.
 */
async function respond(request: HttpRequest, context: Context): Promise<HttpResponse> {
  const method = request.method.toUpperCase();
  const protocol = PROTOCOL_ROUTES.test(request.path);
  if (!protocol && !STREAM_ROUTES.some((r) => r.method === method && r.pattern.test(request.path))) {
    throw new NotFoundError(`no route for ${request.path} on the streaming URL (the HTTP API serves the others)`);
  }
  callers.set(request, await verifier.verifyAuthorizationHeader(request.headers[STREAM_TOKEN_HEADER] ?? request.headers.authorization));
  if (!protocol && method === "POST" && !wantsEventStream(request)) {
    throw new NotAcceptableError("the streaming URL answers only Accept: text/event-stream; the HTTP API answers JSON");
  }
  const app = await appFor(credentialsOf(context), { turnQueue, onTurnCompleted: publishTurnMetrics, onTurnFailed: publishTurnFailed });
  return handlerFor(app)(request);
}

interface StreamInvocation {
  event: LambdaFunctionURLEvent;
  responseStream: ResponseStream;
}

/**
 * The turn's events on a Function URL with response streaming (docs/streaming.md, "In AWS"): the
 * HTTP API's streaming routes through the same product routes, written as they come. The turn
 * runs on if the client goes away; past the request's deadline it goes to the worker and the
 * stream follows it there.
 */
async function stream({ event, responseStream }: StreamInvocation, context: Context): Promise<void> {
  logger.setCorrelationId(event.requestContext.requestId);
  const request: HttpRequest = { ...toHttpRequest(event), canStream: true };
  let response: HttpResponse;
  try {
    response = await respond(request, context);
  } catch (error) {
    logServerError(error, request);
    response = errorResponse(error);
  }
  logger.info("request", { method: request.method, status: response.status, streamed: response.stream !== undefined });
  await writeResponseStream(responseStream, response);
  // Lambda freezes the container once the handler returns: a turn whose client went away runs to its end (or its hand-over to the worker) first.
  await response.settled;
}

const run = withRuntime(stream);

export const handler = streamifyResponse<LambdaFunctionURLEvent>((event, responseStream, context) => run({ event, responseStream }, context));
