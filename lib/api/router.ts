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
}

/** A tiny router: first matching path wins; a path matched with another method is a 405. */
export function createRouter(routes: Route[], onError: (error: unknown, request: HttpRequest) => void = () => undefined) {
  return async function route(request: HttpRequest): Promise<HttpResponse> {
    try {
      const path = trimTrailingSlashes(request.path);
      const method = request.method.toUpperCase();
      const matching = routes.filter((r) => r.pattern.test(path));
      if (matching.length === 0) throw new NotFoundError(`no route for ${path}`);
      const route = matching.find((r) => r.method === method);
      if (!route) throw new MethodNotAllowedError(`${method} is not allowed on ${path}`, [...new Set(matching.map((r) => r.method))]);
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
