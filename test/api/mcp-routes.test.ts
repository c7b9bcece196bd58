import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/api-client.js";

const POLICY = { create_follow_up: { require: "always", approvers: { roles: ["manager"] } } };

let t: TestServer;
const clients: Client[] = [];

beforeAll(async () => {
  t = await startTestServer({ TOOL_APPROVALS: JSON.stringify(POLICY) });
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await t?.close();
});

/** The SDK's own client over Streamable HTTP, with the caller's bearer token on every request. */
async function connect(token: string | undefined): Promise<Client> {
  const client = new Client({ name: "mcp-routes-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`${t.url}/v1/mcp`), {
    requestInit: token ? { headers: { authorization: `Bearer ${token}` } } : {},
  });
  await client.connect(transport);
  clients.push(client);
  return client;
}

type ToolAnswer = { isError?: boolean; structuredContent?: Record<string, any>; content: { type: string; text: string }[] };
const call = async (client: Client, name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args })) as ToolAnswer;
const errorOf = (answer: ToolAnswer) => JSON.parse(answer.content[0].text) as { status: number; code: string };

describe("mcpRoutes", () => {
  describe("POST /v1/mcp", () => {
    it("lists the ask, list_conversations and read_conversation tools, ask not read-only", async () => {
      const client = await connect(await t.token("alice"));
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name).sort()).toEqual(["ask", "list_conversations", "read_conversation"]);
      expect(tools.find((tool) => tool.name === "ask")?.annotations).toMatchObject({ readOnlyHint: false });
      expect(tools.find((tool) => tool.name === "ask")?.inputSchema).toMatchObject({ required: ["question"] });
    });

    it("announces tools without listChanged, a notification a stateless server never sends", async () => {
      const client = await connect(await t.token("alice"));
      const capabilities = client.getServerCapabilities();
      expect(capabilities?.tools).toBeDefined();
      expect(capabilities?.tools).not.toHaveProperty("listChanged");
    });

    it("returns the offline model's answer to ask, remembered in the conversation the HTTP API shows", async () => {
      const token = await t.token("alice");
      const client = await connect(token);
      const first = await call(client, "ask", { question: "My name is Ada." });
      expect(first.isError).toBeFalsy();
      const { conversationId } = first.structuredContent as { conversationId: string };
      const second = await call(client, "ask", { conversationId, question: "What is my name?" });
      expect(second.structuredContent).toMatchObject({ conversationId, status: "completed", answer: "Your name is Ada." });
      const http = await t.call("GET", `/v1/conversations/${conversationId}/messages`, { token });
      expect(http.body.messages.map((m: { content: string }) => m.content)).toContain("Your name is Ada.");
      const read = await call(client, "read_conversation", { conversationId });
      expect(read.structuredContent?.messages).toHaveLength(4);
      const listed = await call(client, "list_conversations", {});
      expect(listed.structuredContent?.conversations.map((c: { conversationId: string }) => c.conversationId)).toContain(conversationId);
    });

    it("returns that the turn waits for approval, and runs nothing, when a tool call needs one", async () => {
      const client = await connect(await t.token("alice"));
      const asked = await call(client, "ask", { question: 'create_follow_up {"title": "Call the supplier"}' });
      expect(asked.structuredContent).toMatchObject({ status: "awaiting_approval", approvals: [expect.objectContaining({ tool: "create_follow_up" })] });
      expect(await t.db.collection("follow_ups").countDocuments({ conversationId: asked.structuredContent?.conversationId })).toBe(0);
    });

    it("returns not_found for another user's conversation, to read and to ask, and lists none of it", async () => {
      const owner = await connect(await t.token("carol", { tenant: "acme" }));
      const { conversationId } = (await call(owner, "ask", { question: "My name is Carol." })).structuredContent as { conversationId: string };
      const before = await t.db.collection("messages").countDocuments({ conversationId });
      for (const claims of [{ user: "mallory", tenant: "acme" }, { user: "carol", tenant: "globex" }, { user: "carol" }]) {
        const intruder = await connect(await t.token(claims.user, "tenant" in claims ? { tenant: claims.tenant } : {}));
        const read = await call(intruder, "read_conversation", { conversationId });
        expect(read.isError).toBe(true);
        expect(errorOf(read)).toMatchObject({ status: 404, code: "not_found" });
        const asked = await call(intruder, "ask", { conversationId, question: "What is her name?" });
        expect(errorOf(asked)).toMatchObject({ status: 404, code: "not_found" });
        const listed = await call(intruder, "list_conversations", {});
        expect(listed.structuredContent?.conversations.map((c: { conversationId: string }) => c.conversationId)).not.toContain(conversationId);
      }
      expect(await t.db.collection("messages").countDocuments({ conversationId })).toBe(before);
    });

    it("returns rate_limited from ask past the user's turns per minute, as the HTTP API's turn entry refuses it", async () => {
      const admin = await t.token("root", { tenant: "acme", roles: ["threadwise:admin"] });
      const limits = { issuer: "api", tenant: "acme", subject: "lena", limits: { turnsPerMinute: 1 } };
      expect((await t.call("PUT", "/v1/admin/limits", { token: admin, json: limits })).status).toBe(200);
      const client = await connect(await t.token("lena", { tenant: "acme" }));
      expect((await call(client, "ask", { question: "My name is Lena." })).structuredContent).toMatchObject({ status: "completed" });
      const refused = await call(client, "ask", { question: "What is my name?" });
      expect(refused.isError).toBe(true);
      expect(errorOf(refused)).toMatchObject({ status: 429, code: "rate_limited" });
    });

    it("answers 401 without a token, and with a token signed by another key, before any MCP message is read", async () => {
      await expect(connect(undefined)).rejects.toMatchObject({ code: 401 });
      const noToken = await t.call("POST", "/v1/mcp", { json: { jsonrpc: "2.0", id: 1, method: "tools/list" } });
      expect(noToken.status).toBe(401);
      expect(noToken.headers.get("www-authenticate")).toBe("Bearer");
      const forged = await t.call("POST", "/v1/mcp", { token: "eyJhbGciOiJFUzI1NiJ9.e30.c2ln", json: { jsonrpc: "2.0", id: 1, method: "tools/list" } });
      expect(forged.status).toBe(401);
    });

    it("answers 400 to a body that is not a JSON-RPC message, and 405 to GET and DELETE (stateless, no sessions)", async () => {
      const token = await t.token("alice");
      expect((await t.call("POST", "/v1/mcp", { token, json: { hello: "world" } })).status).toBe(400);
      expect((await t.call("POST", "/v1/mcp", { token, body: "{not json", headers: { "content-type": "application/json" } })).status).toBe(400);
      for (const method of ["GET", "DELETE"]) {
        const res = await fetch(`${t.url}/v1/mcp`, { method, headers: { authorization: `Bearer ${token}` } });
        expect(res.status).toBe(405);
        expect(res.headers.get("allow")).toBe("POST");
      }
    });
  });
});
