import type { Context } from "aws-lambda";
import type { App } from "../lib/app.js";
import { errorResponse } from "../lib/api/error-response.js";
import type { HttpRequest, HttpResponse } from "../lib/api/http.js";
import { createHttpHandler } from "../lib/api/http-handler.js";
import { mcpRoutes } from "../lib/api/mcp-routes.js";
import { mcpOAuthRoutes } from "../lib/api/mcp-oauth-routes.js";
import { appFor, mcpOAuthFor } from "./shared/app-runtime.js";
import { toHttpRequest, toResult, VerifiedClaims, type HttpApiEvent } from "./shared/http-event.js";
import {
  config,
  credentialsOf,
  logger,
  logServerError,
  publishResponseStatus,
  publishTurnFailed,
  publishTurnMetrics,
  turnQueue,
  withRuntime,
} from "./shared/runtime.js";

const claims = new VerifiedClaims(config.auth);
/** The HTTP API over each app the container makes (a new one when the secret names another database). */
const handlers = new WeakMap<App, (request: HttpRequest) => Promise<HttpResponse>>();

function handlerFor(app: App) {
  let handle = handlers.get(app);
  if (!handle) {
    // Per-user MCP sign-ins finish here when the stage names its callback URL and KMS key (docs/mcp-oauth.md).
    const oauth = mcpOAuthFor(app);
    handle = createHttpHandler(app, config, {
      authenticate: claims.authenticate,
      extraRoutes: oauth ? mcpOAuthRoutes(oauth) : [],
      routesOverApi: mcpRoutes,
      onError: logServerError,
    });
    handlers.set(app, handle);
  }
  return handle;
}

/** The HTTP API (every route of docs/api.md, /healthz and /readyz) on API Gateway HTTP API events. */
async function api(event: HttpApiEvent, context: Context) {
  // The request's id correlates its log lines, and those of the turn it queues (docs/operations.md).
  logger.setCorrelationId(event.requestContext.requestId);
  const request = claims.attach(toHttpRequest(event), event);
  let response;
  try {
    const app = await appFor(credentialsOf(context), { turnQueue, onTurnCompleted: publishTurnMetrics, onTurnFailed: publishTurnFailed });
    response = await handlerFor(app)(request);
  } catch (error) {
    // No app without the secret's keys or a database client: the answer says which, and so does the log.
    logServerError(error, request);
    response = errorResponse(error);
  }
  logger.info("request", { route: event.routeKey, status: response.status });
  publishResponseStatus(response.status);
  return toResult(response);
}

export const handler = withRuntime(api);
