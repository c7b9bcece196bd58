import type { HttpRequest, HttpResponse } from "../../lib/api/http.js";
import { assertConformsToOpenApi } from "./openapi-conformance.js";

/**
 * Calls a router in-process as API Gateway would hand it a request (path and query split, a JSON
 * body), checks the answer against the OpenAPI document and returns its status and parsed body.
 */
export async function callRoute(
  route: (request: HttpRequest) => Promise<HttpResponse>,
  method: string,
  path: string,
  options: { headers?: Record<string, string>; body?: unknown } = {},
): Promise<{ status: number; body: any }> {
  const [pathname, search = ""] = path.split("?");
  const response = await route({
    method,
    path: pathname,
    query: Object.fromEntries(new URLSearchParams(search)),
    headers: { "content-type": "application/json", ...options.headers },
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const body = JSON.parse(response.body);
  assertConformsToOpenApi(method, pathname, response.status, body);
  return { status: response.status, body };
}
