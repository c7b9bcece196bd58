import { MethodNotAllowedError, NotFoundError, ValidationError } from "../errors.js";
import { errorResponse } from "./error-response.js";
import type { HttpRequest, HttpResponse } from "./http.js";
import { trimTrailingSlashes } from "./request-parsing.js";

export type RouteHandler = (request: HttpRequest, params: string[]) => Promise<HttpResponse>;

export interface Route {
  method: string;
  /** Anchored; capture groups become `params`. */
  pattern: RegExp;
  handler: RouteHandler;
  /**
   * Another method on this path is a 404 (no route) rather than a 405: the Agent Protocol's routes,
   * whose unsupported methods docs/agent-protocol.md lists as 404. Default false.
   */
  otherMethodsNotFound?: boolean;
}

/**
 * A tiny router: first matching path wins; a path matched with another method is a 405, or a 404
 * when every route on that path says {@link Route.otherMethodsNotFound}.
 */
export function createRouter(routes: Route[], onError: (error: unknown, request: HttpRequest) => void = () => undefined) {
  return async function route(request: HttpRequest): Promise<HttpResponse> {
    try {
      const path = trimTrailingSlashes(request.path);
      const method = request.method.toUpperCase();
      const matching = routes.filter((r) => r.pattern.test(path));
      if (matching.length === 0) throw new NotFoundError(`no route for ${path}`);
      const route = matching.find((r) => r.method === method);
      if (!route) {
        const allowing = matching.filter((r) => !r.otherMethodsNotFound);
        if (allowing.length === 0) throw new NotFoundError(`no route for ${method} ${path}`);
        throw new MethodNotAllowedError(`${method} is not allowed on ${path}`, [...new Set(allowing.map((r) => r.method))]);
      }
      const params = route.pattern.exec(path)?.slice(1).map(decodeParam) ?? [];
      return await route.handler(request, params);
    } catch (error) {
      onError(error, request);
      return errorResponse(error);
    }
  };
}

function decodeParam(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch (error) {
    throw new ValidationError("malformed path", [{ path: "path", message: "invalid percent-encoding" }], { cause: error });
  }
}
