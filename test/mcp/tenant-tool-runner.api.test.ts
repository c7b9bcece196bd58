import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_LIMITS_ADMIN_ROLE } from "../../lib/config/limits-config.js";
import { startTestServer, type TestServer } from "../support/api-client.js";
import { startHostileServer } from "../support/mcp-servers.js";

let hostile: Awaited<ReturnType<typeof startHostileServer>>;
let other: Awaited<ReturnType<typeof startHostileServer>>;
let t: TestServer;

beforeAll(async () => {
  [hostile, other] = await Promise.all([startHostileServer(), startHostileServer()]);
  t = await startTestServer({
    MCP_SERVERS: JSON.stringify([{ name: "hostile", transport: { kind: "streamable-http", url: hostile.url }, tools: ["lookup", "write_record", "flood"] }]),
    VIEW_TOOL_OUTPUT_TOKENS: "500",
  });
});
afterAll(async () => {
  await t?.close();
  await Promise.all([hostile?.stop(), other?.stop()]);
});

async function ask(token: string, content: string) {
  const id = (await t.call("POST", "/v1/conversations", { token })).body.conversationId as string;
  const asked = await t.call("POST", `/v1/conversations/${id}/messages`, { token, json: { content } });
  return { id, asked };
}

async function finished(token: string, id: string, turnId: string) {
  for (let i = 0; i < 100; i++) {
    const turn = await t.call("GET", `/v1/conversations/${id}/turns/${turnId}`, { token });
    if (turn.body.status === "completed" || turn.body.status === "failed") return turn.body;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("the turn did not finish");
}

describe("MCP tools in a turn", () => {
  it("runs a read-only MCP tool at once, and its answer quotes the output", async () => {
    const alice = await t.token("alice", { tenant: "acme" });
    const { asked } = await ask(alice, 'hostile__lookup {"key": "k1"}');
    expect(asked.status).toBe(200);
    expect(asked.body.answer).toContain("value of k1");
  });

  it("holds an MCP tool not marked read-only for approval, runs it once approved through the API, and a retried decision repeats nothing", async () => {
    const alice = await t.token("alice", { tenant: "acme" });
    const before = hostile.counters.writes;
    const { id, asked } = await ask(alice, 'hostile__write_record {"note": "n1"}');
    expect(asked.status).toBe(202);
    expect(asked.body.status).toBe("awaiting_approval");
    expect(hostile.counters.writes).toBe(before);
    const approvalId = asked.body.approvals[0].approvalId as string;
    const decided = await t.call("POST", `/v1/conversations/${id}/approvals/${approvalId}`, { token: alice, json: { decision: "approve" } });
    expect(decided.status).toBe(200);
    const turn = await finished(alice, id, asked.body.turnId);
    expect(turn.status).toBe("completed");
    expect(hostile.counters.writes).toBe(before + 1);
    // The same decision again (a retried request): the effect is not repeated.
    const again = await t.call("POST", `/v1/conversations/${id}/approvals/${approvalId}`, { token: alice, json: { decision: "approve" } });
    expect(again.status).toBe(200);
    await new Promise((r) => setTimeout(r, 200));
    expect(hostile.counters.writes).toBe(before + 1);
  });

  it("offloads an MCP output over the view's threshold to an artifact", async () => {
    const alice = await t.token("alice", { tenant: "acme" });
    const { id, asked } = await ask(alice, "hostile__flood {}");
    expect(asked.status).toBe(200);
    const artifacts = await t.db.collection("artifacts").countDocuments({});
    expect(artifacts).toBeGreaterThan(0);
    const state = await t.call("GET", `/v1/conversations/${id}/state`, { token: alice });
    expect(JSON.stringify(state.body).length).toBeLessThan(200_000);
  });
});

describe("a tenant's own MCP server", () => {
  const entry = () => ({ name: "other", transport: { kind: "streamable-http", url: other.url }, tools: ["lookup"] });

  it("adds a tenant's server whose tools that tenant's turns get and another tenant's do not", async () => {
    const admin = await t.token("root", { tenant: "globex", roles: [DEFAULT_LIMITS_ADMIN_ROLE] });
    const put = await t.call("PUT", "/v1/admin/mcp-servers", { token: admin, json: { issuer: "api", tenant: "globex", server: entry() } });
    expect(put.status).toBe(200);
    expect(put.body.servers.map((s: { name: string }) => s.name)).toEqual(["hostile", "other"]);
    const gina = await t.token("gina", { tenant: "globex" });
    expect((await ask(gina, 'other__lookup {"key": "g"}')).asked.body.answer).toContain("value of g");
    const alice = await t.token("alice", { tenant: "acme" });
    expect((await ask(alice, 'other__lookup {"key": "a"}')).asked.body.answer).not.toContain("value of a");
    const removed = await t.call("DELETE", "/v1/admin/mcp-servers?issuer=api&tenant=globex&name=other", { token: admin });
    expect(removed.status).toBe(200);
    expect(removed.body.own).toEqual([]);
  });

  it("answers 400 for a tenant's entry whose credential header is not allowed or whose key is outside its own, and stores nothing", async () => {
    const admin = await t.token("root", { tenant: "acme", roles: [DEFAULT_LIMITS_ADMIN_ROLE] });
    const put = (auth: unknown) =>
      t.call("PUT", "/v1/admin/mcp-servers", { token: admin, json: { issuer: "api", tenant: "acme", server: { ...entry(), name: "leak", auth } } });
    const leak = await put({ kind: "static", secretName: "wikiToken", header: "X-Leak" });
    expect(leak.status).toBe(400);
    expect(JSON.stringify(leak.body)).toContain("the credential header is one of Authorization");
    const outside = await put({ kind: "static", secretName: "mcp/wikiToken" });
    expect(outside.status).toBe(400);
    expect(JSON.stringify(outside.body)).toContain("mcp/<issuer>/<tenant>/<name>");
    const listed = await t.call("GET", "/v1/admin/mcp-servers?issuer=api&tenant=acme", { token: admin });
    expect(listed.body.own).toEqual([]);
  });
});
