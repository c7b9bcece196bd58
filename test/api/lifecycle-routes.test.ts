import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHttpHandler } from "../../lib/api/http-handler.js";
import { createApp, type App } from "../../lib/app.js";
import { apiPrincipal } from "../../lib/auth/principal.js";
import { loadConfig } from "../../lib/config/config.js";
import { mongoUri } from "../support/mongo.js";
import { callRoute } from "../support/route-call.js";

const ADMIN = "ops:admin";
const OPERATOR = "ops:operator";
let app: App;
let route: ReturnType<typeof createHttpHandler>;

beforeAll(async () => {
  const config = loadConfig({
    MONGODB_URI: mongoUri(),
    MONGODB_DB: `lifecycle_${randomUUID().slice(0, 8)}`,
    LIMITS_ADMIN_ROLE: ADMIN,
    OPERATOR_ROLE: OPERATOR,
  });
  app = await createApp(config, { tools: [] });
  // `x-tenant` and `x-roles` stand for what a verified token says.
  route = createHttpHandler(app, config, {
    authenticate: async (request) => ({
      principal: apiPrincipal(request.headers["x-user"] ?? "x", request.headers["x-tenant"] ?? null),
      roles: (request.headers["x-roles"] ?? "").split(",").filter(Boolean),
    }),
  });
});
afterAll(() => app?.close());

type As = { user?: string; tenant?: string; roles?: string[] };
async function call(method: string, path: string, as: As, body?: unknown) {
  const headers: Record<string, string> = { "x-user": as.user ?? "root", "x-roles": (as.roles ?? []).join(",") };
  if (as.tenant) headers["x-tenant"] = as.tenant;
  return callRoute(route, method, path, { headers, body });
}
const acmeAdmin: As = { tenant: "acme", roles: [ADMIN] };

describe("lifecycleRoutes", () => {
  describe("GET /v1/admin/audit", () => {
    it("returns a limit changed, with its value before and after, and who changed it from which request", async () => {
      const scope = { issuer: "api", tenant: "acme", subject: "ada" };
      await call("PUT", "/v1/admin/limits", acmeAdmin, { ...scope, limits: { turnsPerMinute: 3 } });
      await call("PUT", "/v1/admin/limits", acmeAdmin, { ...scope, limits: { turnsPerMinute: 5, tokensPerDay: null } });
      const read = await call("GET", "/v1/admin/audit?issuer=api&tenant=acme", acmeAdmin);
      const changes = read.body.records.filter((r: { action: string }) => r.action === "limits.set");
      expect(changes.map((r: { before: unknown; after: unknown }) => [r.before, r.after])).toEqual([
        [null, { turnsPerMinute: 3 }],
        [{ turnsPerMinute: 3 }, { turnsPerMinute: 5, tokensPerDay: null }],
      ]);
      expect(changes[1]).toMatchObject({ actor: { issuer: "api", tenant: "acme", subject: "root" }, resource: { subject: "ada" }, channel: "api" });
      expect(changes[1].prevHash).toBe(changes[0].hash);
    });

    it("returns an MCP server removed, with the entry it had before", async () => {
      const server = { name: "wiki", transport: { kind: "streamable-http", url: "https://wiki.example.com/mcp" } };
      await call("PUT", "/v1/admin/mcp-servers", acmeAdmin, { issuer: "api", tenant: "acme", server });
      expect((await call("DELETE", "/v1/admin/mcp-servers?issuer=api&tenant=acme&name=wiki", acmeAdmin)).status).toBe(200);
      const records = (await call("GET", "/v1/admin/audit?issuer=api&tenant=acme", acmeAdmin)).body.records;
      expect(records.find((r: { action: string }) => r.action === "mcp_server.delete")).toMatchObject({
        resource: { server: "wiki" },
        before: server,
        after: null,
      });
      expect(records.find((r: { action: string }) => r.action === "mcp_server.put")).toMatchObject({ before: null, after: server });
    });

    it("returns the reads of a conversation's record, state and inspector: who, which conversation, which request; no contents", async () => {
      const doc = await app.database.conversations.create(apiPrincipal("uma", "acme"));
      const uma: As = { user: "uma", tenant: "acme" };
      await callRoute(route, "GET", `/v1/conversations/${doc._id}/messages`, { headers: { "x-user": "uma", "x-tenant": "acme", "x-request-id": "req-42" } });
      await call("GET", `/v1/conversations/${doc._id}/state`, uma);
      const records = (await call("GET", "/v1/admin/audit?issuer=api&tenant=acme&limit=500", acmeAdmin)).body.records.filter(
        (r: { resource: { conversationId?: string } }) => r.resource.conversationId === doc._id,
      );
      expect(records.map((r: { action: string }) => r.action)).toEqual(["conversation.read", "conversation.state.read"]);
      expect(records[0]).toMatchObject({ actor: { subject: "uma" }, channel: "api", requestId: "req-42" });
    });

    it("returns 403 to another tenant's admin and to a caller without the role; an operator reads any tenant", async () => {
      await call("PUT", "/v1/admin/limits", acmeAdmin, { issuer: "api", tenant: "acme", limits: { turnsPerMinute: 7 } });
      expect((await call("GET", "/v1/admin/audit?issuer=api&tenant=acme", { tenant: "globex", roles: [ADMIN] })).status).toBe(403);
      expect((await call("GET", "/v1/admin/audit?issuer=api&tenant=acme", { tenant: "acme" })).status).toBe(403);
      expect((await call("GET", "/v1/admin/audit?issuer=api&tenant=acme", { roles: [ADMIN] })).status).toBe(403);
      const operator = await call("GET", "/v1/admin/audit?issuer=api&tenant=acme&limit=1", { roles: [OPERATOR] });
      expect(operator.status).toBe(200);
      expect(operator.body).toMatchObject({ records: [{ seq: 1 }], nextAfter: 1 });
    });
  });

  describe("POST /v1/admin/erasures", () => {
    it("returns 404 for a conversation that is not there, and 400 for a target of no known kind", async () => {
      const missing = { target: { kind: "conversation", conversationId: randomUUID() } };
      expect((await call("POST", "/v1/admin/erasures", acmeAdmin, missing)).status).toBe(404);
      expect((await call("POST", "/v1/admin/erasures", acmeAdmin, { target: { kind: "planet" } })).status).toBe(400);
    });

    it("erases a conversation of the admin's tenant, and the erasure can be read back with its receipt", async () => {
      const doc = await app.database.conversations.create(apiPrincipal("zoe", "acme"));
      const erased = await call("POST", "/v1/admin/erasures", acmeAdmin, { target: { kind: "conversation", conversationId: doc._id } });
      expect(erased.body.deleted).toEqual({ conversations: 1 });
      const read = await call("GET", `/v1/admin/erasures/${erased.body.receiptId}`, acmeAdmin);
      expect(read.body).toMatchObject({ status: "completed", receipt: { hash: erased.body.hash } });
      expect((await call("GET", `/v1/admin/erasures/${erased.body.receiptId}`, { tenant: "globex", roles: [ADMIN] })).status).toBe(404);
    });
  });

  describe("GET /v1/admin/exports", () => {
    it("returns a user's documents as NDJSON, then the manifest with counts and hashes, and records the export", async () => {
      await app.database.conversations.create(apiPrincipal("ivy", "acme"));
      const response = await route({
        method: "GET",
        path: "/v1/admin/exports",
        query: { issuer: "api", tenant: "acme", subject: "ivy" },
        headers: { "x-user": "root", "x-tenant": "acme", "x-roles": ADMIN },
      });
      expect(response.headers["content-type"]).toBe("application/x-ndjson");
      const lines = response.body
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line));
      expect(lines[0]).toMatchObject({ collection: "conversations", document: { owner: { subject: "ivy" } } });
      const { manifest } = lines.at(-1);
      expect(manifest).toMatchObject({ target: { kind: "user", subject: "ivy" }, collections: { conversations: { count: 1 } } });
      const records = (await call("GET", "/v1/admin/audit?issuer=api&tenant=acme&limit=500", acmeAdmin)).body.records;
      expect(records.at(-1)).toMatchObject({ action: "export", resource: { subject: "ivy" }, detail: { manifestHash: manifest.hash } });
    });

    it("returns 403 to another tenant's admin, before anything is read", async () => {
      const response = await route({
        method: "GET",
        path: "/v1/admin/exports",
        query: { issuer: "api", tenant: "acme", subject: "ada" },
        headers: { "x-user": "eve", "x-tenant": "globex", "x-roles": ADMIN },
      });
      expect(response.status).toBe(403);
    });
  });
});
