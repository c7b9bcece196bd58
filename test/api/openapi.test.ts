import { randomUUID } from "node:crypto";
import { Validator } from "@seriousme/openapi-schema-validator";
import { OPERATIONS, openApiDocument } from "../../lib/api/openapi.js";
import { startTestServer, type TestServer } from "../support/api-client.js";
import { assertConformsToOpenApi } from "../support/openapi-conformance.js";

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => t?.close());

describe("api/openapi", () => {
  describe("openApiDocument", () => {
    it("returns an OpenAPI 3.1 document that an established validator accepts", async () => {
      const validator = new Validator();
      const result = await validator.validate(openApiDocument());
      expect(result.errors ?? []).toEqual([]);
      expect(result.valid).toBe(true);
      expect(validator.version).toBe("3.1");
    });

    it("returns request schemas generated from the zod schemas that validate requests", () => {
      const post = (openApiDocument() as any).paths["/v1/conversations/{conversationId}/messages"].post;
      expect(post.requestBody.content["application/json"].schema).toMatchObject({
        type: "object",
        required: ["content"],
        additionalProperties: false,
      });
      const limit = (openApiDocument() as any).paths["/v1/conversations"].get.parameters.find((p: { name: string }) => p.name === "limit");
      expect(limit).toMatchObject({ in: "query", required: false, schema: { type: "integer", minimum: 1, maximum: 100 } });
    });
  });

  describe("openApiDocument responses", () => {
    it.each(OPERATIONS.filter((op) => op.body).map((op) => [op.method.toUpperCase(), op.path] as const))(
      "lists 400, 413 and 415, which parsing any body can answer, for %s %s",
      (method, path) => {
        const responses = (openApiDocument() as any).paths[path][method.toLowerCase()].responses;
        expect(Object.keys(responses)).toEqual(expect.arrayContaining(["400", "413", "415"]));
      },
    );

    it("describes the 200 of a message with the status the server sends beside the answer", () => {
      const post = (openApiDocument() as any).paths["/v1/conversations/{conversationId}/messages"].post;
      const schema = post.responses["200"].content["application/json"].schema;
      expect(schema.required).toEqual(expect.arrayContaining(["turnId", "status", "answer"]));
      expect(schema.properties.status).toMatchObject({ const: "completed" });
    });
  });

  describe("openApiDocument gateway answers", () => {
    const listOp = () => (openApiDocument() as any).paths["/v1/conversations"].get.responses;
    const gatewayBody = (body: unknown) => () => assertConformsToOpenApi("GET", "/v1/conversations", 429, body);

    it("describes 429 as API Gateway answers it, a message only", () => {
      expect(gatewayBody({ message: "Too Many Requests" })).not.toThrow();
      expect(listOp()["429"].description).toContain("API Gateway");
    });

    it("describes 401 as the API answers it and as API Gateway's JWT authorizer does", () => {
      expect(() => assertConformsToOpenApi("GET", "/v1/conversations", 401, { message: "Unauthorized" })).not.toThrow();
      expect(() => assertConformsToOpenApi("GET", "/v1/conversations", 401, { error: { code: "unauthorized", message: "token expired" } })).not.toThrow();
      expect(() => assertConformsToOpenApi("GET", "/v1/conversations", 401, { error: "unauthorized" })).toThrow(/does not match/);
    });
  });

  describe("GET /openapi.json", () => {
    it("returns the document without a token", async () => {
      const response = await t.call("GET", "/openapi.json");
      expect(response.status).toBe(200);
      expect(response.body).toEqual(openApiDocument());
    });
  });

  describe("every operation", () => {
    it.each(OPERATIONS.map((op) => [op.method.toUpperCase(), op.path] as const))("is served by the local server: %s %s", async (method, path) => {
      const token = await t.token(`openapi-${randomUUID()}`);
      const concrete = path.replace(/\{[^}]+\}/g, randomUUID());
      const json = path.endsWith("/messages") || path.endsWith("/edit") ? { content: "hi" } : {};
      const response = await t.call(method, concrete, { token, ...(method === "POST" ? { json } : {}) });
      // A route that exists answers its own statuses (404 here is "no such conversation"), never the router's 404 or 405.
      expect(response.status).not.toBe(405);
      expect(response.body?.error?.message ?? "").not.toMatch(/^no route/);
    });
  });

  describe("assertConformsToOpenApi", () => {
    it("throws for a status the operation does not document, and for a body that does not match", () => {
      expect(() => assertConformsToOpenApi("GET", "/healthz", 404, { error: { code: "not_found", message: "x" } })).toThrow(/does not list/);
      expect(() => assertConformsToOpenApi("GET", "/healthz", 200, { status: "maybe" })).toThrow(/does not match/);
      expect(() => assertConformsToOpenApi("GET", "/v1/conversations/abc", 200, { conversationId: "abc" })).toThrow(/does not match/);
      expect(() => assertConformsToOpenApi("GET", "/healthz", 200, { status: "ok" })).not.toThrow();
    });
  });
});
