import { describe, expect, it } from "vitest";
import { json, type HttpRequest } from "../../lib/api/http.js";
import { createRouter, type Route } from "../../lib/api/router.js";

const request = (method: string, path: string): HttpRequest => ({ method, path, headers: {}, query: {} });

/** Each route answers with its name and the parameters it was given. */
function routes(): Route[] {
  const answer = (name: string) => async (_: HttpRequest, params: string[]) => json(200, { name, params });
  return [
    { method: "GET", pattern: /^\/v1\/things\/([^/]+)$/, handler: answer("get thing") },
    { method: "DELETE", pattern: /^\/v1\/things\/([^/]+)$/, handler: answer("delete thing") },
    { method: "GET", pattern: /^\/v1\/things\/special$/, handler: answer("special") },
  ];
}

describe("router", () => {
  describe("createRouter", () => {
    it("returns the first matching route's answer with its decoded parameters, trailing slashes and method case ignored", async () => {
      const route = createRouter(routes());
      expect((await route(request("get", "/v1/things/a%20b/"))).body).toBe(JSON.stringify({ name: "get thing", params: ["a b"] }));
      expect(JSON.parse((await route(request("GET", "/v1/things/special"))).body).name).toBe("get thing");
    });

    it("returns 404 for a path no route matches and 405 with Allow for a method the path does not take", async () => {
      const errors: unknown[] = [];
      const route = createRouter(routes(), (error) => errors.push(error));
      expect((await route(request("GET", "/v2/things/x"))).status).toBe(404);
      const refused = await route(request("POST", "/v1/things/x"));
      expect(refused.status).toBe(405);
      expect(refused.headers.allow).toBe("GET, DELETE");
      expect(errors).toHaveLength(2);
    });

    it("returns 404 without Allow for a method a path does not take when its routes say otherMethodsNotFound", async () => {
      const answer = async () => json(200, {});
      const route = createRouter([
        { method: "GET", pattern: /^\/threads\/([^/]+)$/, handler: answer, otherMethodsNotFound: true },
        { method: "PATCH", pattern: /^\/threads\/([^/]+)$/, handler: answer, otherMethodsNotFound: true },
      ]);
      const refused = await route(request("POST", "/threads/prune"));
      expect(refused.status).toBe(404);
      expect(refused.headers.allow).toBeUndefined();
      expect(JSON.parse(refused.body).error.message).toBe("no route for POST /threads/prune");
    });

    it("returns 400 for a malformed percent-encoding in a parameter", async () => {
      const response = await createRouter(routes())(request("GET", "/v1/things/%E0%A4%A"));
      expect(response.status).toBe(400);
    });
  });
});
