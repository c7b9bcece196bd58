import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_LIMITS_ADMIN_ROLE } from "../../lib/config/limits-config.js";
import { COLLECTIONS } from "../../lib/store/collections.js";
import { startTestServer, type TestServer } from "../support/api-client.js";

/**
 * The admin API across tenants (issue 41, row 2), from the attacker's side: real signed tokens
 * over HTTP against the local server. globex's admin tries what it did before the fix; every
 * attempt is 403, and the stores read afterwards are as they were.
 */

const OPERATOR = "threadwise:operator";
const crm = (url: string) => ({ name: "crm", transport: { kind: "streamable-http", url } });
let t: TestServer;
let operator: string;
let globexAdmin: string;
let acmeAdmin: string;

/** Everything the admin API can change or read, as stored. */
async function stores() {
  const all = (name: string) => t.db.collection(name).find({}).sort({ _id: 1 }).toArray();
  const [overrides, servers, usage] = await Promise.all([all(COLLECTIONS.limitOverrides), all(COLLECTIONS.mcpServers), all(COLLECTIONS.usageDaily)]);
  return { overrides, servers, usage };
}

beforeAll(async () => {
  t = await startTestServer({ OPERATOR_ROLE: OPERATOR });
  [operator, globexAdmin, acmeAdmin] = await Promise.all([
    t.token("ops", { roles: [OPERATOR] }),
    t.token("gus", { tenant: "globex", roles: [DEFAULT_LIMITS_ADMIN_ROLE] }),
    t.token("ann", { tenant: "acme", roles: [DEFAULT_LIMITS_ADMIN_ROLE] }),
  ]);
  // acme/alice has usage; acme, alice and a Slack workspace have limits and acme an MCP server, all set by the operator.
  const alice = await t.token("alice", { tenant: "acme" });
  const id = (await t.call("POST", "/v1/conversations", { token: alice })).body.conversationId as string;
  expect((await t.call("POST", `/v1/conversations/${id}/messages`, { token: alice, json: { content: "hello" } })).status).toBe(200);
  for (const json of [
    { issuer: "api", tenant: "acme", limits: { tokensPerDay: 1000 } },
    { issuer: "api", tenant: "acme", subject: "alice", limits: { turnsPerMinute: 5 } },
    { issuer: "slack", tenant: "T0123", limits: { usdPerMonth: 7 } },
  ]) {
    expect((await t.call("PUT", "/v1/admin/limits", { token: operator, json })).status).toBe(200);
  }
  expect(
    (await t.call("PUT", "/v1/admin/mcp-servers", { token: operator, json: { issuer: "api", tenant: "acme", server: crm("https://crm.acme.example/mcp") } }))
      .status,
  ).toBe(200);
});
afterAll(() => t?.close());

/** globex's admin against acme's and a Slack workspace's scopes: the seven attempts of the issue, and the routes beside them. */
const ATTEMPTS: { what: string; method: string; path: string; json?: unknown }[] = [
  { what: "reads acme's limits", method: "GET", path: "/v1/admin/limits?issuer=api&tenant=acme" },
  { what: "sets acme's limits", method: "PUT", path: "/v1/admin/limits", json: { issuer: "api", tenant: "acme", limits: { tokensPerDay: null } } },
  { what: "reads acme/alice's usage", method: "GET", path: "/v1/admin/usage?issuer=api&tenant=acme&subject=alice" },
  { what: "reads a Slack workspace's limits", method: "GET", path: "/v1/admin/limits?issuer=slack&tenant=T0123" },
  {
    what: "adds an MCP server to api/acme",
    method: "PUT",
    path: "/v1/admin/mcp-servers",
    json: { issuer: "api", tenant: "acme", server: crm("https://evil.example/mcp") },
  },
  {
    what: "adds an MCP server to slack/T0123",
    method: "PUT",
    path: "/v1/admin/mcp-servers",
    json: { issuer: "slack", tenant: "T0123", server: crm("https://evil.example/mcp") },
  },
  {
    what: "sets acme/alice's limits",
    method: "PUT",
    path: "/v1/admin/limits",
    json: { issuer: "api", tenant: "acme", subject: "alice", limits: { turnsPerMinute: null } },
  },
  { what: "reads acme's usage", method: "GET", path: "/v1/admin/usage?issuer=api&tenant=acme" },
  { what: "reads acme's MCP servers", method: "GET", path: "/v1/admin/mcp-servers?issuer=api&tenant=acme" },
  { what: "removes acme's MCP server", method: "DELETE", path: "/v1/admin/mcp-servers?issuer=api&tenant=acme&name=crm" },
  {
    what: "sets the limits of API users without a tenant",
    method: "PUT",
    path: "/v1/admin/limits",
    json: { issuer: "api", subject: "bob", limits: { tokensPerDay: 1 } },
  },
  { what: "reads a Slack user's limits in its own tenant's name", method: "GET", path: "/v1/admin/limits?issuer=slack&tenant=globex&subject=U1" },
];

describe("the admin API's tenant boundary", () => {
  describe("a tenant admin against another tenant", () => {
    it.each(ATTEMPTS)("returns 403 when globex's admin $what, and reads or changes nothing", async ({ method, path, json }) => {
      const before = await stores();
      const response = await t.call(method, path, { token: globexAdmin, json });
      expect(response.status).toBe(403);
      expect(response.body).toEqual({ error: { code: "forbidden", message: expect.stringContaining("its own tenant (api/globex)") } });
      expect(await stores()).toEqual(before);
    });

    it("returns 403 to acme's admin on globex's limits", async () => {
      expect((await t.call("GET", "/v1/admin/limits?issuer=api&tenant=globex", { token: acmeAdmin })).status).toBe(403);
    });
  });

  describe("a tenant admin without a tenant", () => {
    it("returns 403 on every scope, its own subject's included, and changes nothing", async () => {
      const lost = await t.token("lost", { roles: [DEFAULT_LIMITS_ADMIN_ROLE] });
      const before = await stores();
      const put = await t.call("PUT", "/v1/admin/limits", { token: lost, json: { issuer: "api", subject: "lost", limits: { tokensPerDay: 1 } } });
      expect(put.status).toBe(403);
      expect(put.body.error.message).toContain("names none");
      expect((await t.call("GET", "/v1/admin/mcp-servers?issuer=api", { token: lost })).status).toBe(403);
      expect(await stores()).toEqual(before);
    });
  });

  describe("a tenant admin on its own tenant", () => {
    it("reads and sets its tenant's limits, its users' limits and usage, and its MCP servers", async () => {
      const tenant = await t.call("PUT", "/v1/admin/limits", { token: acmeAdmin, json: { issuer: "api", tenant: "acme", limits: { tokensPerDay: 2000 } } });
      expect(tenant.status).toBe(200);
      expect(tenant.body.own).toEqual({ tokensPerDay: 2000 });
      const user = await t.call("PUT", "/v1/admin/limits", {
        token: acmeAdmin,
        json: { issuer: "api", tenant: "acme", subject: "alice", limits: { turnsPerMinute: 9 } },
      });
      expect(user.body.own).toEqual({ turnsPerMinute: 9 });
      const usage = await t.call("GET", "/v1/admin/usage?issuer=api&tenant=acme&subject=alice", { token: acmeAdmin });
      expect(usage.status).toBe(200);
      expect(usage.body.total.turns).toBe(1);
      const put = await t.call("PUT", "/v1/admin/mcp-servers", {
        token: acmeAdmin,
        json: { issuer: "api", tenant: "acme", server: { ...crm("https://crm2.acme.example/mcp"), name: "crm2" } },
      });
      expect(put.status).toBe(200);
      expect(put.body.own.map((o: { server: { name: string } }) => o.server.name)).toEqual(["crm", "crm2"]);
      expect((await t.call("DELETE", "/v1/admin/mcp-servers?issuer=api&tenant=acme&name=crm2", { token: acmeAdmin })).status).toBe(200);
    });
  });

  describe("an operator", () => {
    it("administers every issuer and tenant", async () => {
      for (const path of [
        "/v1/admin/limits?issuer=api&tenant=globex",
        "/v1/admin/limits?issuer=slack&tenant=T0123",
        "/v1/admin/limits?issuer=teams&tenant=contoso&subject=u1",
        "/v1/admin/limits?issuer=api&subject=bob",
        "/v1/admin/usage?issuer=api&tenant=acme&subject=alice",
        "/v1/admin/mcp-servers?issuer=slack&tenant=T0123",
      ]) {
        expect((await t.call("GET", path, { token: operator })).status, path).toBe(200);
      }
      const put = await t.call("PUT", "/v1/admin/mcp-servers", {
        token: operator,
        json: { issuer: "slack", tenant: "T0123", server: crm("https://crm.example/mcp") },
      });
      expect(put.status).toBe(200);
    });
  });
});
