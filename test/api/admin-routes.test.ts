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
    MONGODB_DB: `admin_${randomUUID().slice(0, 8)}`,
    LIMITS_ADMIN_ROLE: ADMIN,
    OPERATOR_ROLE: OPERATOR,
    LIMIT_USER_TOKENS_PER_DAY: "500",
  });
  app = await createApp(config, { tools: [] });
  route = createHttpHandler(app, config, {
    authenticate: async (request) => ({
      principal: apiPrincipal(request.headers["x-user"] ?? "x", "acme"),
      roles: request.headers["x-role"] ? [request.headers["x-role"]] : [],
    }),
  });
});
afterAll(() => app?.close());

/** `admin`: acme's tenant admin (the caller is acme's); `operator`: the deployment's operator. */
async function call(method: string, path: string, options: { admin?: boolean; operator?: boolean; body?: unknown } = {}) {
  const role = options.operator ? OPERATOR : options.admin ? ADMIN : undefined;
  return callRoute(route, method, path, { headers: { "x-user": "root", ...(role && { "x-role": role }) }, body: options.body });
}

describe("adminRoutes", () => {
  describe("GET /v1/admin/limits", () => {
    it("returns 403 to a caller without the configured role", async () => {
      expect((await call("GET", "/v1/admin/limits?issuer=api&tenant=acme")).status).toBe(403);
    });

    it("returns 400 when neither a tenant nor a user is named", async () => {
      expect((await call("GET", "/v1/admin/limits?issuer=api", { admin: true })).status).toBe(400);
    });

    it("returns the defaults of configuration for a user with no limits of its own", async () => {
      const read = await call("GET", "/v1/admin/limits?issuer=api&tenant=acme&subject=new", { admin: true });
      expect(read.body).toMatchObject({ limits: { tokensPerDay: 500, turnsPerMinute: null }, own: null, defaults: { tokensPerDay: 500 } });
    });
  });

  describe("PUT /v1/admin/limits", () => {
    it("returns the limits as they apply: null removes a default limit, an absent key keeps it", async () => {
      const set = await call("PUT", "/v1/admin/limits", {
        admin: true,
        body: { issuer: "api", tenant: "acme", subject: "ada", limits: { tokensPerDay: null, turnsPerMinute: 3 } },
      });
      expect(set.status).toBe(200);
      expect(set.body.limits).toMatchObject({ tokensPerDay: null, turnsPerMinute: 3 });
    });

    it("returns 400 and changes nothing for a limit that is not a positive number", async () => {
      const body = { issuer: "api", tenant: "acme", subject: "bad", limits: { tokensPerDay: -1 } };
      expect((await call("PUT", "/v1/admin/limits", { admin: true, body })).status).toBe(400);
      expect((await call("GET", "/v1/admin/limits?issuer=api&tenant=acme&subject=bad", { admin: true })).body.own).toBeNull();
    });
  });

  describe("GET /v1/admin/usage", () => {
    it("returns 400 for a range that ends before it starts", async () => {
      expect((await call("GET", "/v1/admin/usage?issuer=api&tenant=acme&from=2030-02-01&to=2030-01-01", { admin: true })).status).toBe(400);
    });

    it("returns no days and a zero total for a tenant that used nothing", async () => {
      const usage = await call("GET", "/v1/admin/usage?issuer=api&tenant=quiet", { operator: true });
      expect(usage.body).toMatchObject({ days: [], total: { turns: 0, costUsd: 0 } });
    });
  });
});
