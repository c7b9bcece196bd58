import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { SignJWT, generateKeyPair } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_PROTOCOL_ASSISTANT_ID } from "../../lib/api/agent-protocol-schemas.js";
import { COLLECTIONS } from "../../lib/store/collections.js";
import { startTestServer, type TestServer } from "../support/api-client.js";

let api: TestServer;
let token: string;
let conversationId: string;
let turnId: string;
const MAX_CHARS = 200;

beforeAll(async () => {
  api = await startTestServer({ MAX_MESSAGE_CHARS: String(MAX_CHARS) });
  token = await api.token("alice");
  conversationId = (await api.call("POST", "/v1/conversations", { token })).body.conversationId;
  turnId = (await api.call("POST", `/v1/conversations/${conversationId}/messages`, { token, json: { content: "a first question" } })).body.turnId;
});
afterAll(() => api.close());

async function counts() {
  const names = [COLLECTIONS.conversations, COLLECTIONS.messages, COLLECTIONS.turns, COLLECTIONS.checkpoints];
  return Object.fromEntries(await Promise.all(names.map(async (n) => [n, await api.db.collection(n).countDocuments()])));
}

function expectError(res: { status: number; body: any }, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.body).toEqual({ error: expect.objectContaining({ code, message: expect.any(String) }) });
  expect(JSON.stringify(res.body)).not.toMatch(/\bat .*\.(ts|js):\d+/);
}

describe("bad input", () => {
  const messages = () => `/v1/conversations/${conversationId}/messages`;

  const cases: [string, () => Promise<{ status: number; body: any }>, number, string][] = [
    [
      "malformed JSON",
      () => api.call("POST", messages(), { token, body: "{not json", headers: { "content-type": "application/json" } }),
      400,
      "invalid_request",
    ],
    ["a body that is not an object", () => api.call("POST", messages(), { token, json: ["hi"] }), 400, "invalid_request"],
    ["a missing content", () => api.call("POST", messages(), { token, json: {} }), 400, "invalid_request"],
    ["an empty content", () => api.call("POST", messages(), { token, json: { content: "   " } }), 400, "invalid_request"],
    ["a content that is not a string", () => api.call("POST", messages(), { token, json: { content: 42 } }), 400, "invalid_request"],
    ["an unknown field", () => api.call("POST", messages(), { token, json: { content: "hi", role: "system" } }), 400, "invalid_request"],
    ["no body at all", () => api.call("POST", messages(), { token }), 400, "invalid_request"],
    ["a content over the limit", () => api.call("POST", messages(), { token, json: { content: "x".repeat(MAX_CHARS + 1) } }), 413, "payload_too_large"],
    ["a body over the byte limit", () => api.call("POST", messages(), { token, json: { content: "x".repeat(300_000) } }), 413, "payload_too_large"],
    [
      "a non-JSON content type",
      () => api.call("POST", messages(), { token, body: "content=hi", headers: { "content-type": "application/x-www-form-urlencoded" } }),
      415,
      "unsupported_media_type",
    ],
    [
      "a malformed Idempotency-Key",
      () => api.call("POST", messages(), { token, json: { content: "hi" }, headers: { "idempotency-key": "x".repeat(300) } }),
      400,
      "invalid_request",
    ],
    [
      "an unknown conversation id",
      () => api.call("POST", `/v1/conversations/00000000-0000-4000-8000-000000000000/messages`, { token, json: { content: "hi" } }),
      404,
      "not_found",
    ],
    ["a malformed conversation id", () => api.call("GET", `/v1/conversations/not-an-id`, { token }), 400, "invalid_request"],
    ["a malformed turn id", () => api.call("GET", `/v1/conversations/${conversationId}/turns/abc`, { token }), 400, "invalid_request"],
    [
      "an unknown turn id",
      () => api.call("GET", `/v1/conversations/${conversationId}/turns/00000000-0000-4000-8000-000000000000`, { token }),
      404,
      "not_found",
    ],
    ["a missing token", () => api.call("POST", messages(), { json: { content: "hi" } }), 401, "unauthorized"],
    ["a token that is not a bearer token", () => api.call("GET", "/v1/conversations", { headers: { authorization: `Basic ${token}` } }), 401, "unauthorized"],
    ["a garbage token", () => api.call("GET", "/v1/conversations", { token: "abc.def.ghi" }), 401, "unauthorized"],
    ["a tampered token", () => api.call("GET", "/v1/conversations", { token: `${token.slice(0, -4)}AAAA` }), 401, "unauthorized"],
    ["a wrong method on a known path", () => api.call("PUT", messages(), { token, json: { content: "hi" } }), 405, "method_not_allowed"],
    ["an unknown path", () => api.call("GET", "/v2/everything", { token }), 404, "not_found"],
  ];

  for (const [name, send, status, code] of cases) {
    it(`answers ${status} ${code} for ${name} and changes nothing`, async () => {
      const before = await counts();
      expectError(await send(), status, code);
      expect(await counts()).toEqual(before);
    });
  }

  it("answers 401 for an expired token", async () => {
    const expired = await api.token("alice", { expiresIn: Math.floor(Date.now() / 1000) - 3600 });
    const res = await api.call("GET", "/v1/conversations", { token: expired });
    expectError(res, 401, "unauthorized");
    expect(res.body.error.message).toBe("token expired");
  });

  it("answers 401 for a token signed by another key", async () => {
    const { privateKey } = await generateKeyPair("ES256");
    const forged = await new SignJWT({})
      .setProtectedHeader({ alg: "ES256" })
      .setSubject("alice")
      .setIssuer("threadwise-local")
      .setAudience("threadwise")
      .setExpirationTime("1h")
      .sign(privateKey);
    expectError(await api.call("GET", "/v1/conversations", { token: forged }), 401, "unauthorized");
  });

  describe("a body over the byte limit on every route that takes one", () => {
    const over = JSON.stringify({ content: "x".repeat(300_000) });
    const routes: [string, () => string][] = [
      ["POST /v1/conversations", () => "/v1/conversations"],
      ["POST .../turns/{turnId}/edit", () => `/v1/conversations/${conversationId}/turns/${turnId}/edit`],
      ["POST .../turns/{turnId}/regenerate", () => `/v1/conversations/${conversationId}/turns/${turnId}/regenerate`],
      ["POST .../approvals/{approvalId}", () => `/v1/conversations/${conversationId}/approvals/00000000-0000-4000-8000-000000000000`],
    ];
    it.each(routes)("answers 413 payload_too_large, as the OpenAPI document lists, for %s, and changes nothing", async (_name, path) => {
      const before = await counts();
      expectError(await api.call("POST", path(), { token, body: over, headers: { "content-type": "application/json" } }), 413, "payload_too_large");
      expect(await counts()).toEqual(before);
    });
  });

  describe("a question on every entry that takes one", () => {
    /** What an entry answered: the HTTP status (an MCP tool error names the one its entry would answer) and the error code. */
    type Answer = { status: number; code?: string; message?: string };
    const v1 = async (question: string): Promise<Answer> => {
      const id = (await api.call("POST", "/v1/conversations", { token })).body.conversationId;
      const res = await api.call("POST", `/v1/conversations/${id}/messages`, { token, json: { content: question } });
      return { status: res.status, code: res.body?.error?.code, message: res.body?.error?.message };
    };
    const protocol = async (question: string): Promise<Answer> => {
      const id = (await api.call("POST", "/v1/conversations", { token })).body.conversationId;
      const res = await fetch(`${api.url}/threads/${id}/runs/wait`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ assistant_id: AGENT_PROTOCOL_ASSISTANT_ID, input: { messages: [{ type: "human", content: question }] } }),
      });
      const body = (await res.json()) as { error?: { code: string; message: string } };
      return { status: res.status, code: body.error?.code, message: body.error?.message };
    };
    const mcp = async (question: string): Promise<Answer> => {
      const client = new Client({ name: "bad-input-test", version: "1.0.0" });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${api.url}/v1/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
      try {
        const answer = (await client.callTool({ name: "ask", arguments: { question } })) as { isError?: boolean; content: { text: string }[] };
        if (!answer.isError) return { status: 200 };
        const error = JSON.parse(answer.content[0].text) as { status: number; code: string; message: string };
        return { status: error.status, code: error.code, message: error.message };
      } finally {
        await client.close();
      }
    };
    const entries: [string, (question: string) => Promise<Answer>][] = [
      ["POST /v1/conversations/{id}/messages", v1],
      ["POST /threads/{id}/runs/wait", protocol],
      ["MCP ask", mcp],
    ];

    it.each(entries)("is trimmed before it is measured, then refused blank with 400 and too long with 413, on %s", async (_name, send) => {
      expect(await send(`  ${"x".repeat(MAX_CHARS)}\n\n`)).toMatchObject({ status: 200 });
      expect(await send("x".repeat(MAX_CHARS + 1))).toMatchObject({ status: 413, code: "payload_too_large" });
      expect(await send(" \n ")).toMatchObject({ status: 400, code: "invalid_request" });
      expect(await send("")).toMatchObject({ status: 400, code: "invalid_request" });
    });

    it("answers the same over-long question with the same 413 and message on all three, and the same blank one with the same 400", async () => {
      const over = `  ${"x".repeat(MAX_CHARS + 1)}  `;
      const answers = await Promise.all(entries.map(([, send]) => send(over)));
      expect(answers).toEqual(entries.map(() => ({ status: 413, code: "payload_too_large", message: `the question is over ${MAX_CHARS} characters` })));
      const blank = await Promise.all(entries.map(([, send]) => send("  ")));
      expect(blank).toEqual(entries.map(() => ({ status: 400, code: "invalid_request", message: "the question is empty" })));
    });
  });

  it("names the allowed methods on a 405", async () => {
    const res = await api.call("PATCH", `/v1/conversations/${conversationId}`, { token });
    expect(res.headers.get("allow")).toBe("GET, DELETE");
  });
});
