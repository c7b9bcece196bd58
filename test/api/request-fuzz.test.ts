import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/api-client.js";

let api: TestServer;
let token: string;
let conversationId: string;

beforeAll(async () => {
  api = await startTestServer();
  token = await api.token("alice");
  conversationId = (await api.call("POST", "/v1/conversations", { token })).body.conversationId;
});
afterAll(() => api.close());

const segment = fc.oneof(
  fc.constantFrom("v1", "conversations", "messages", "turns", "healthz", "slack", "teams", "..", "%00", "%2e%2e", ""),
  fc.string({ maxLength: 12 }).map(encodeURIComponent),
  fc.uuid(),
);
const path = fc.oneof(
  fc.array(segment, { maxLength: 6 }).map((parts) => `/${parts.join("/")}`),
  fc.constantFrom("messages", "turns/abc", "", "turns/00000000-0000-4000-8000-000000000000").map((tail) => `/v1/conversations/CID/${tail}`),
);
const body = fc.oneof(
  fc.constant(undefined),
  fc.string({ maxLength: 200 }),
  fc.json({ maxDepth: 3 }),
  fc.record({ content: fc.oneof(fc.string({ maxLength: 50 }), fc.integer(), fc.constant(null), fc.array(fc.string())) }).map((o) => JSON.stringify(o)),
  fc.constantFrom("{", '{"content":', "\u0000", "[]", "null", '{"content":"x","__proto__":{"a":1}}'),
);
const request = fc.record({
  method: fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"),
  path,
  body,
  contentType: fc.constantFrom(undefined, "application/json", "text/plain", "application/json; charset=utf-8", "multipart/form-data"),
  auth: fc.constantFrom("valid", "none", "garbage", "basic"),
  idempotencyKey: fc.option(fc.string({ maxLength: 300 }), { nil: undefined }),
});

describe("the API under malformed requests", () => {
  it("answers every request with a JSON error below 500 (or a success), and stays up", async () => {
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const headers: Record<string, string> = {};
        if (r.contentType) headers["content-type"] = r.contentType;
        if (r.auth === "valid") headers.authorization = `Bearer ${token}`;
        if (r.auth === "garbage") headers.authorization = "Bearer x.y.z";
        if (r.auth === "basic") headers.authorization = "Basic YWxpY2U6cHc=";
        if (r.idempotencyKey !== undefined && /^[\x20-\x7e]*$/.test(r.idempotencyKey)) headers["idempotency-key"] = r.idempotencyKey;
        // fetch cannot send a body with GET.
        const sent = r.method === "GET" ? undefined : r.body;
        const res = await api.call(r.method, r.path.replace("CID", conversationId), { body: sent, headers });
        expect(res.status).toBeLessThan(500);
        if (res.status >= 400) {
          expect(res.headers.get("content-type")).toMatch(/^application\/json/);
          expect(res.body).toEqual({ error: expect.objectContaining({ code: expect.any(String), message: expect.any(String) }) });
        }
      }),
      { numRuns: 400, seed: 20261130 },
    );
    expect((await api.call("GET", "/healthz")).status).toBe(200);
  });
});
