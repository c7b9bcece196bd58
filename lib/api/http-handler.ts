import type { App } from "../app.js";
import type { Config } from "../config/config.js";
import { TurnEventFollower } from "../events/turn-event-follower.js";
import { adminRoutes } from "./admin-routes.js";
import { adminMcpRoutes } from "./admin-mcp-routes.js";
import { contentKeyRoutes } from "./content-key-routes.js";
import { lifecycleRoutes } from "./lifecycle-routes.js";
import { memberRoutes } from "./member-routes.js";
import { agentProtocolRoutes } from "./agent-protocol-routes.js";
import { apiRoutes, type ApiRoutesDeps } from "./api-routes.js";
import { traceRequest } from "../observability/tracing.js";
import { errorResponse } from "./error-response.js";
import type { Authenticate, HttpRequest, HttpResponse } from "./http.js";
import { IdempotentRequests } from "./idempotent-requests.js";
import { createRouter, type Route } from "./router.js";

/** What the error log names for a stream whose store reads failed after it began (its request has long been answered 200). */
const TURN_EVENTS_REQUEST: HttpRequest = { method: "GET", path: "/v1/conversations/{id}/turns/{id}/events", headers: {}, query: {}, canStream: true };

/** The one route that must answer while the database is away (docs/api.md). */
const LIVENESS_PATH = "/healthz";

export interface HttpHandlerOptions {
  authenticate: Authenticate;
  /** Routes served beside the API (Slack, Teams, the local console). */
  extraRoutes?: Route[];
  /** Routes over the API's own parts, made once with them (the MCP endpoint, lib/api/mcp-routes.ts). Default: none. */
  routesOverApi?: (deps: ApiRoutesDeps) => Route[];
  onError?(error: unknown, request: HttpRequest): void;
}

/**
 * The HTTP API over an app, for the api function and the local server; the worker serves no HTTP
 * and does not load it. Liveness answers without the database; every other route waits until
 * the database is known to be set up.
 */
export function createHttpHandler(app: App, config: Config, options: HttpHandlerOptions): (request: HttpRequest) => Promise<HttpResponse> {
  const idempotentRequests = new IdempotentRequests({
    collection: app.database.idempotency,
    cipher: app.database.cipher,
    inProgressTimeoutMs: config.leaseTtlMs,
  });
  const deps: ApiRoutesDeps = {
    authenticate: options.authenticate,
    database: app.database,
    runner: app.runner,
    idempotentRequests,
    maxMessageChars: config.maxMessageChars,
    dispatcher: app.dispatcher,
    events: new TurnEventFollower({
      store: app.database.turnEvents,
      turns: app.database.turns,
      hub: app.events.hub,
      onError: (error) => options.onError?.(error, TURN_EVENTS_REQUEST),
    }),
    approvals: app.approvals,
    streamingUrl: config.deployment.streamingUrl,
    limits: app.limits,
    admission: app.admission,
    audit: app.audit,
  };
  // Who administers which scope: the operator everything, a tenant admin its own tenant (lib/auth/admin-scope.ts).
  const adminRoles = { operatorRole: config.limits.operatorRole, tenantAdminRole: config.limits.adminRole };
  // The Agent Protocol's threads and runs over the same parts (docs/agent-protocol.md).
  const routes = [
    ...apiRoutes(deps),
    // An API conversation's members: its owner or a tenant admin shares it within the tenant (docs/api.md, "Members").
    ...memberRoutes({ authenticate: options.authenticate, conversations: app.database.conversations, roles: adminRoles, audit: app.audit }),
    ...agentProtocolRoutes(deps),
    ...adminRoutes({ authenticate: options.authenticate, limits: app.limits, roles: adminRoles, audit: app.audit }),
    ...adminMcpRoutes({ authenticate: options.authenticate, store: app.mcp.store, defaults: app.mcp.defaults, roles: adminRoles, audit: app.audit }),
    // Erasure, export and the audit log (docs/data-lifecycle.md).
    ...lifecycleRoutes({ authenticate: options.authenticate, database: app.database, eraser: app.eraser, audit: app.audit, ...adminRoles }),
    // Content key rotation and its re-encryption (docs/security.md, "Rotation").
    ...contentKeyRoutes({ authenticate: options.authenticate, keyRotation: app.keyRotation, roles: adminRoles }),
    ...(options.extraRoutes ?? []),
    ...(options.routesOverApi?.(deps) ?? []),
  ];
  const router = createRouter(routes, options.onError);
  return async (request) => {
    if (request.method === "GET" && request.path === LIVENESS_PATH) return router(request);
    // The span of the request, the root of its turn's trace (docs/operations.md, "Tracing").
    return traceRequest(request, async () => {
      try {
        await app.ready();
      } catch (error) {
        options.onError?.(error, request);
        return errorResponse(error);
      }
      return router(request);
    });
  };
}
