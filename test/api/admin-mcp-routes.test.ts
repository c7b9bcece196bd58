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
const wiki = { name: "wiki", transport: { kind: "streamable-http", url: "https://wiki.example/mcp" } };
let app: App;
let route: ReturnType<typeof createHttpHandler>;

beforeAll(async () => {
  const config = loadConfig({
    MONGODB_URI: mongoUri(),
    MONGODB_DB: `admin_mcp_${randomUUID().slice(0, 8)}`,
    LIMITS_ADMIN_ROLE: ADMIN,
    OPERATOR_ROLE: OPERATOR,
    MCP_SERVERS: JSON.stringify([wiki]),
  });
  app = await createApp(config, { tools: [] });
  route = createHttpHandler(app, config, {
    authenticate: async (request) => ({ principal: apiPrincipal("root", "acme"), roles: request.headers["x-role"] ? [request.headers["x-role"]] : [] }),
  });
});
afterAll(() => app?.close());

/** `admin`: acme's tenant admin (the caller is acme's); `operator`: the deployment's operator. */
async function call(method: string, path: string, options: { admin?: boolean; operator?: boolean; body?: unknown } = {}) {
  const role = options.operator ? OPERATOR : options.admin ? ADMIN : undefined;
  return callRoute(route, method, path, { headers: { ...(role && { "x-role": role }) }, body: options.body });
}

describe("adminMcpRoutes", () => {
  describe("GET /v1/admin/mcp-servers", () => {
    it("returns 403 to a caller without the admin role", async () => {
      expect((await call("GET", "/v1/admin/mcp-servers?issuer=api&tenant=acme")).status).toBe(403);
    });

    it("returns the configured servers for a tenant with none of its own", async () => {
      const read = await call("GET", "/v1/admin/mcp-servers?issuer=api&tenant=acme", { admin: true });
      expect(read.body).toEqual({ tenant: { issuer: "api", tenant: "acme" }, servers: [wiki], own: [], defaults: [wiki] });
    });
  });

  describe("PUT /v1/admin/mcp-servers", () => {
    it("returns the tenant's entry over the default of the same name", async () => {
      const own = { ...wiki, transport: { kind: "streamable-http", url: "https://own.example/mcp" } };
      const put = await call("PUT", "/v1/admin/mcp-servers", { operator: true, body: { issuer: "api", tenant: "initech", server: own } });
      expect(put.status).toBe(200);
      expect(put.body.servers).toEqual([own]);
    });

    it("returns 400 and stores nothing for a stdio entry", async () => {
      const server = { name: "evil", transport: { kind: "stdio", command: "sh" } };
      expect((await call("PUT", "/v1/admin/mcp-servers", { admin: true, body: { issuer: "api", tenant: "acme", server } })).status).toBe(400);
      expect((await call("GET", "/v1/admin/mcp-servers?issuer=api&tenant=acme", { admin: true })).body.own).toEqual([]);
    });
  });

  describe("DELETE /v1/admin/mcp-servers", () => {
    it("returns 404 for a name the tenant has not", async () => {
      expect((await call("DELETE", "/v1/admin/mcp-servers?issuer=api&tenant=acme&name=nothing", { admin: true })).status).toBe(404);
    });
  });
});
