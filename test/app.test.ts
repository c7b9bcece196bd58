import { randomUUID } from "node:crypto";
import { createApp, type App } from "../lib/app.js";
import type { HttpRequest } from "../lib/api/http.js";
import { createHttpHandler } from "../lib/api/http-handler.js";
import { loadConfig } from "../lib/config/config.js";
import { DATABASE_SETUP_VERSION } from "../lib/store/database.js";
import { createMongoClient } from "../lib/store/mongo-client.js";
import { apiPrincipal, type Caller } from "../lib/auth/principal.js";
import { dropKnownCollections } from "./support/drop-collections.js";
import { mongoUri, openTestDatabase, type TestDatabase } from "./support/mongo.js";
import { startTcpProxy } from "./support/tcp-proxy.js";

const caller: Caller = { principal: apiPrincipal("alice"), roles: [] };
const get = (path: string): HttpRequest => ({ method: "GET", path, headers: {}, query: {} });
/** Nothing listens on port 1: every operation fails server selection. */
const UNREACHABLE = "mongodb://127.0.0.1:1/?directConnection=true";

let inspector: TestDatabase;
const apps: App[] = [];

beforeAll(async () => {
  inspector = await openTestDatabase("app");
});
afterAll(async () => {
  for (const app of apps) await app.close();
  await inspector.cleanup();
});

/** An app and the HTTP API over it, as the api function and the local server serve it. */
async function app(uri: string, dbName: string, setup: "create" | "ensure", selectionMs = 5_000) {
  const config = loadConfig({ MONGODB_URI: uri, MONGODB_DB: dbName, MONGODB_SERVER_SELECTION_TIMEOUT_MS: String(selectionMs) });
  const made = await createApp(config, { tools: [], setup });
  apps.push(made);
  return { app: made, route: createHttpHandler(made, config, { authenticate: async () => caller }) };
}

describe("createApp", () => {
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
  });

  describe("ready", () => {
    it("throws while the database is unreachable, and checks again on the next call", async () => {
      const proxy = await startTcpProxy(Number(new URL(mongoUri().replace("mongodb://", "http://")).port));
      const client = createMongoClient(`mongodb://127.0.0.1:${proxy.port}/?directConnection=true`, { serverSelectionTimeoutMs: 300 });
      await client.connect();
      await proxy.cut();
      const dbName = `app_${randomUUID().slice(0, 8)}`;
      const ensured = await createApp(loadConfig({ MONGODB_DB: dbName }), { tools: [], setup: "ensure", mongoClient: client });
      await expect(ensured.ready()).rejects.toThrow();
      await proxy.restore();
      await expect(ensured.ready()).resolves.toBeUndefined();
      expect(await inspector.client.db(dbName).collection("setup").countDocuments()).toBe(1);
      await dropKnownCollections(inspector.client.db(dbName));
      await client.close();
      await proxy.close();
    });
  });
});
