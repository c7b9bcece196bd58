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

// Contents stored clear (no key source): what a rotation is refused with; the rotation itself is test/lifecycle/key-rotation.test.ts's.
beforeAll(async () => {
  const config = loadConfig({
    MONGODB_URI: mongoUri(),
    MONGODB_DB: `content_keys_${randomUUID().slice(0, 8)}`,
    LIMITS_ADMIN_ROLE: ADMIN,
    OPERATOR_ROLE: OPERATOR,
    CONTENT_ENCRYPTION: "off",
  });
  app = await createApp(config, { tools: [] });
  // `x-tenant` and `x-roles` stand for what a verified token says.
  route = createHttpHandler(app, config, {
    authenticate: async (request) => ({
      principal: apiPrincipal("root", request.headers["x-tenant"] ?? null),
      roles: (request.headers["x-roles"] ?? "").split(",").filter(Boolean),
    }),
  });
});
afterAll(() => app?.close());

const call = (method: string, path: string, as: { tenant?: string; roles: string[] }, body?: unknown) =>
  callRoute(route, method, path, { headers: { "x-roles": as.roles.join(","), ...(as.tenant && { "x-tenant": as.tenant }) }, body });

describe("contentKeyRoutes", () => {
  describe("POST /v1/admin/content-keys/rotate", () => {
    it("returns 409 content_encryption_off when contents are stored clear, and records nothing", async () => {
      const refused = await call("POST", "/v1/admin/content-keys/rotate", { tenant: "acme", roles: [ADMIN] }, { issuer: "api", tenant: "acme" });
      expect(refused.status).toBe(409);
      expect(refused.body.error).toMatchObject({ code: "content_encryption_off", message: expect.stringContaining("CONTENT_ENCRYPTION=off") });
      expect(await app.audit.list({ issuer: "api", tenant: "acme" }, { limit: 10 })).toEqual([]);
    });

    it("returns 400 for a body naming no issuer, and 403 without an admin role, before anything else", async () => {
      expect((await call("POST", "/v1/admin/content-keys/rotate", { tenant: "acme", roles: [ADMIN] }, { tenant: "acme" })).status).toBe(400);
      expect((await call("POST", "/v1/admin/content-keys/rotate", { tenant: "acme", roles: [] }, { issuer: "api", tenant: "acme" })).status).toBe(403);
    });

    it("returns 403 to a tenant admin for the callers without a tenant, which only an operator administers", async () => {
      expect((await call("POST", "/v1/admin/content-keys/rotate", { tenant: "acme", roles: [ADMIN] }, { issuer: "api" })).status).toBe(403);
      expect((await call("POST", "/v1/admin/content-keys/rotate", { roles: [OPERATOR] }, { issuer: "api" })).status).toBe(409);
    });
  });

  describe("GET /v1/admin/content-keys", () => {
    it("returns a null re-encryption for a tenant whose key never rotated", async () => {
      const read = await call("GET", "/v1/admin/content-keys?issuer=slack&tenant=T1", { roles: [OPERATOR] });
      expect(read).toEqual({ status: 200, body: { tenant: { issuer: "slack", tenant: "T1" }, reencryption: null } });
    });
  });
});
