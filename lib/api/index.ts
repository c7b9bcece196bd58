export { apiRoutes, turnView, type ApiRoutesDeps } from "./api-routes.js";
export { createHttpHandler, type HttpHandlerOptions } from "./http-handler.js";
export { channelRoutes } from "./channel-routes.js";
export { createRouter, type Route, type RouteHandler } from "./router.js";
export { errorResponse, DEFAULT_UNAVAILABLE_RETRY_AFTER_S } from "./error-response.js";
export { decodeEventBody, json, lowercaseHeaders, noContent, type Authenticate, type HttpRequest, type HttpResponse } from "./http.js";
export { parseId, parseJsonBody, parseQuery, MAX_BODY_BYTES } from "./request-parsing.js";
export {
  IdempotentRequests,
  DEFAULT_API_IDEMPOTENCY_KEY_PREFIX,
  DEFAULT_API_IDEMPOTENCY_TTL_S,
  type IdempotentRequestsOptions,
} from "./idempotent-requests.js";
