import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/api-client.js";

let api: TestServer;
let conversationId: string;
let turnId: string;
let owner: string;

beforeAll(async () => {
  api = await startTestServer();
  owner = await api.token("alice", { tenant: "acme" });
  conversationId = (await api.call("POST", "/v1/conversations", { token: owner })).body.conversationId;
  turnId = (await api.call("POST", `/v1/conversations/${conversationId}/messages`, { token: owner, json: { content: "hello" } })).body.turnId;
});
afterAll(() => api.close());

const endpoints = () =>
  [
    ["GET", `/v1/conversations/${conversationId}`, undefined],
    ["GET", `/v1/conversations/${conversationId}/messages`, undefined],
    ["POST", `/v1/conversations/${conversationId}/messages`, { content: "let me in" }],
    ["GET", `/v1/conversations/${conversationId}/turns/${turnId}`, undefined],
    ["DELETE", `/v1/conversations/${conversationId}`, undefined],
  ] as const;

describe("conversation ownership", () => {
  for (const [who, claims] of [
    ["another user of the same tenant", { user: "mallory", tenant: "acme" }],
    ["the same user name in another tenant", { user: "alice", tenant: "globex" }],
    ["the same user name without a tenant", { user: "alice" }],
  ] as const) {
    it(`answers 404 on every endpoint to ${who} and changes nothing`, async () => {
      const intruder = await api.token(claims.user, "tenant" in claims ? { tenant: claims.tenant } : {});
      for (const [method, path, json] of endpoints()) {
        const res = await api.call(method, path, { token: intruder, json });
        expect(res.status, `${method} ${path}`).toBe(404);
        expect(res.body.error.code).toBe("not_found");
      }
      const list = await api.call("GET", "/v1/conversations", { token: intruder });
      expect(list.body.conversations).toEqual([]);
      const record = await api.call("GET", `/v1/conversations/${conversationId}/messages`, { token: owner });
      expect(record.body.messages).toHaveLength(2);
    });
  }

  it("answers 404 for a turn of another conversation of the same owner", async () => {
    const other = (await api.call("POST", "/v1/conversations", { token: owner })).body.conversationId;
    const res = await api.call("GET", `/v1/conversations/${other}/turns/${turnId}`, { token: owner });
    expect(res.status).toBe(404);
  });
});
