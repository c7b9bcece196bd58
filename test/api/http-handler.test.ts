import { randomUUID } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import type { HttpRequest } from "../../lib/api/http.js";
import { createHttpHandler } from "../../lib/api/http-handler.js";
import { createApp, type App } from "../../lib/app.js";
import { apiPrincipal, type Caller } from "../../lib/auth/principal.js";
import { loadConfig } from "../../lib/config/config.js";
import { DATABASE_SETUP_VERSION } from "../../lib/store/database.js";
import { dropKnownCollections } from "../support/drop-collections.js";
import { mongoUri } from "../support/mongo.js";
import { useTestDatabase } from "../support/store-fixture.js";

const caller: Caller = { principal: apiPrincipal("alice"), roles: [] };
const get = (path: string): HttpRequest => ({ method: "GET", path, headers: {}, query: {} });
/** Nothing listens on port 1: every operation fails server selection. */
const UNREACHABLE = "mongodb://127.0.0.1:1/?directConnection=true";

// Each test's app gets a database of its own; this client inspects them.
const inspector = useTestDatabase("http_handler", { clearBeforeEach: false });
const apps: App[] = [];
afterAll(async () => {
  for (const app of apps) await app.close();
});

/** An app and the HTTP API over it, as the api function and the local server serve it. */
async function app(uri: string, dbName: string, setup: "create" | "ensure", selectionMs = 5_000) {
  const config = loadConfig({ MONGODB_URI: uri, MONGODB_DB: dbName, MONGODB_SERVER_SELECTION_TIMEOUT_MS: String(selectionMs) });
  const made = await createApp(config, { tools: [], setup });
  apps.push(made);
  return { app: made, route: createHttpHandler(made, config, { authenticate: async () => caller }) };
}

describe("createHttpHandler", () => {
  it("returns 200 from /healthz without reaching the database", async () => {
    const unreachable = await app(UNREACHABLE, "app_none", "ensure", 200);
    expect((await unreachable.route(get("/healthz"))).status).toBe(200);
  });

  it("returns 503 with Retry-After when the database is unreachable before its set-up was checked", async () => {
    const unreachable = await app(UNREACHABLE, "app_none", "ensure", 200);
    const response = await unreachable.route(get("/v1/conversations"));
    expect(response.status).toBe(503);
    expect(Number(response.headers["retry-after"])).toBeGreaterThan(0);
  });

  it("sets up, in ensure mode, a database that records no set-up, before the first request that needs it", async () => {
    const dbName = `app_${randomUUID().slice(0, 8)}`;
    const db = inspector.client.db(dbName);
    const ensured = await app(mongoUri(), dbName, "ensure");
    expect(await db.collection("setup").countDocuments()).toBe(0);
    expect((await ensured.route(get("/v1/conversations"))).status).toBe(200);
    expect(await db.collection("setup").findOne({})).toMatchObject({ version: DATABASE_SETUP_VERSION });
    expect((await db.collection("conversations").indexes()).map((i) => i.name)).toContain("channel_key");
    await dropKnownCollections(db);
  });

  it("returns 200 from /readyz once the database is set up, and 503 when it records no set-up", async () => {
    const dbName = `app_${randomUUID().slice(0, 8)}`;
    const created = await app(mongoUri(), dbName, "create");
    expect(await created.route(get("/readyz"))).toMatchObject({ status: 200, body: JSON.stringify({ status: "ready", database: "ok" }) });
    await inspector.client.db(dbName).collection("setup").deleteMany({});
    const response = await created.route(get("/readyz"));
    expect(response.status).toBe(503);
    expect(JSON.parse(response.body).error).toEqual({ code: "service_unavailable", message: "the database is not set up" });
    await dropKnownCollections(inspector.client.db(dbName));
  });

  it("tells onError of a failed readiness check with the request", async () => {
    const seen: string[] = [];
    const config = loadConfig({ MONGODB_URI: UNREACHABLE, MONGODB_DB: "app_none", MONGODB_SERVER_SELECTION_TIMEOUT_MS: "200" });
    const made = await createApp(config, { tools: [], setup: "ensure" });
    apps.push(made);
    const route = createHttpHandler(made, config, { authenticate: async () => caller, onError: (_error, request) => seen.push(request.path) });
    expect((await route(get("/v1/conversations"))).status).toBe(503);
    expect(seen).toEqual(["/v1/conversations"]);
  });

  it("serves the extra routes beside the API once the database is set up", async () => {
    const dbName = `app_${randomUUID().slice(0, 8)}`;
    const config = loadConfig({ MONGODB_URI: mongoUri(), MONGODB_DB: dbName });
    const made = await createApp(config, { tools: [], setup: "create" });
    apps.push(made);
    const extra = { method: "GET", pattern: /^\/extra$/, handler: async () => ({ status: 204, headers: {}, body: "" }) };
    const route = createHttpHandler(made, config, { authenticate: async () => caller, extraRoutes: [extra] });
    expect((await route(get("/extra"))).status).toBe(204);
    expect((await route(get("/v1/conversations"))).status).toBe(200);
    await dropKnownCollections(inspector.client.db(dbName));
  });
});
