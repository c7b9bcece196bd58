import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { createApp } from "../../lib/app.js";
import { createHttpHandler } from "../../lib/api/http-handler.js";
import { loadConfig } from "../../lib/config/config.js";
import type { HttpRequest, HttpResponse } from "../../lib/api/http.js";
import { createMongoClient } from "../../lib/store/mongo-client.js";
import type { Caller } from "../../lib/auth/principal.js";
import type { ToolDefinition } from "../../lib/tools/tool.js";
import type { MongoClient } from "mongodb";
import { dropKnownCollections } from "../support/drop-collections.js";
import { mongoUri } from "../support/mongo.js";
import { startTcpProxy, type TcpProxy } from "../support/tcp-proxy.js";
import { apiPrincipal } from "../../lib/auth/principal.js";

const caller: Caller = { principal: apiPrincipal("alice"), roles: [] };
let proxy: TcpProxy;
let client: MongoClient;
let app: { route: (request: HttpRequest) => Promise<HttpResponse> };
const dbName = `outage_${randomUUID().slice(0, 8)}`;

let plugPulled = false;

/** A tool that takes the database away in the middle of a turn, the first time it runs. */
const pullThePlug: ToolDefinition = {
  name: "pull_the_plug",
  description: "Cuts the database connection.",
  schema: z.object({}),
  sideEffects: false,
  run: async () => {
    if (!plugPulled) {
      plugPulled = true;
      await proxy.cut();
    }
    return "cut";
  },
};

function request(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): HttpRequest {
  return { method, path, headers: { "content-type": "application/json", ...headers }, query: {}, body: body === undefined ? undefined : JSON.stringify(body) };
}

beforeAll(async () => {
  proxy = await startTcpProxy(Number(new URL(mongoUri().replace("mongodb://", "http://")).port));
  const uri = `mongodb://127.0.0.1:${proxy.port}/?directConnection=true`;
  client = createMongoClient(uri, { serverSelectionTimeoutMs: 800 });
  await client.connect();
  const config = loadConfig({ MONGODB_URI: uri, MONGODB_DB: dbName, LEASE_TTL_MS: "1000" });
  const made = await createApp(config, { mongoClient: client, tools: [pullThePlug] });
  app = { route: createHttpHandler(made, config, { authenticate: async () => caller }) };
});
afterAll(async () => {
  await proxy.restore().catch(() => undefined);
  await dropKnownCollections(client.db(dbName));
  await client.close();
  await proxy.close();
});

describe("the API during a MongoDB outage", () => {
  it("answers 503 with Retry-After, leaves no half-written turn, and recovers by itself", async () => {
    const created = await app.route(request("POST", "/v1/conversations"));
    const { conversationId } = JSON.parse(created.body);
    const path = `/v1/conversations/${conversationId}/messages`;

    const during = await app.route(request("POST", path, { content: "pull_the_plug {}" }, { "idempotency-key": "outage-1" }));
    expect(during.status).toBe(503);
    expect(JSON.parse(during.body).error.code).toBe("service_unavailable");
    expect(Number(during.headers["retry-after"])).toBeGreaterThan(0);

    const stillDown = await app.route(request("GET", "/v1/conversations"));
    expect(stillDown.status).toBe(503);

    await proxy.restore();
    // Recovery is the driver noticing the server again, on its own heartbeat: wait for it, boundedly, rather than for a guessed time.
    await vi.waitFor(async () => expect((await app.route(request("GET", "/v1/conversations"))).status).toBe(200), { timeout: 10_000, interval: 100 });

    // The same request, retried, finishes the interrupted turn instead of starting another.
    const retried = await app.route(request("POST", path, { content: "pull_the_plug {}" }, { "idempotency-key": "outage-1" }));
    expect(retried.status).toBe(200);
    const record = JSON.parse((await app.route(request("GET", path))).body).messages;
    expect(record.map((m: { role: string }) => m.role)).toEqual(["user", "assistant"]);
    const running = await client.db(dbName).collection("turns").countDocuments({ conversationId, status: "running" });
    expect(running).toBe(0);
  });
});
