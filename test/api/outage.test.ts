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
import { Gate } from "../support/gate.js";

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

/** A tool that holds its turn until the test opens the gate. */
let hold = new Gate();
const holdTool: ToolDefinition = {
  name: "hold_turn",
  description: "Waits for the test.",
  schema: z.object({}),
  sideEffects: false,
  run: async () => {
    await hold.pass();
    return "held";
  },
};

/** The errors the handler reported to its error log, with the route named. */
const logged: { error: string; path: string }[] = [];

function request(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): HttpRequest {
  return { method, path, headers: { "content-type": "application/json", ...headers }, query: {}, body: body === undefined ? undefined : JSON.stringify(body) };
}

beforeAll(async () => {
  proxy = await startTcpProxy(Number(new URL(mongoUri().replace("mongodb://", "http://")).port));
  const uri = `mongodb://127.0.0.1:${proxy.port}/?directConnection=true`;
  client = createMongoClient(uri, { serverSelectionTimeoutMs: 800 });
  await client.connect();
  const config = loadConfig({ MONGODB_URI: uri, MONGODB_DB: dbName, LEASE_TTL_MS: "1000" });
  const made = await createApp(config, { mongoClient: client, tools: [pullThePlug, holdTool] });
  const onError = (error: unknown, req: HttpRequest) => logged.push({ error: error instanceof Error ? error.name : String(error), path: req.path });
  app = { route: createHttpHandler(made, config, { authenticate: async () => caller, onError }) };
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

  it("ends a stream that follows a turn with failed service_unavailable when the database goes away, and logs it, never cutting it", async () => {
    await vi.waitFor(async () => expect((await app.route(request("GET", "/v1/conversations"))).status).toBe(200), { timeout: 10_000, interval: 100 });
    const { conversationId } = JSON.parse((await app.route(request("POST", "/v1/conversations"))).body);
    hold = new Gate();
    const asked = app.route(request("POST", `/v1/conversations/${conversationId}/messages`, { content: "hold_turn {}" }));
    await hold.reached;
    const turnId = (await client.db(dbName).collection("turns").findOne({ conversationId }))!._id as unknown as string;
    const follow = await app.route({
      ...request("GET", `/v1/conversations/${conversationId}/turns/${turnId}/events`, undefined, { accept: "text/event-stream" }),
      canStream: true,
    });
    expect(follow.status).toBe(200);
    const frames: string[] = [];
    const reading = (async () => {
      for await (const piece of follow.stream!(new AbortController().signal)) {
        frames.push(piece);
        if (frames.length === 1) await proxy.cut();
      }
    })();
    await expect(reading).resolves.toBeUndefined();
    const last = frames.at(-1)!;
    expect(last).toMatch(/^event: failed\n/);
    expect(JSON.parse(last.split("data: ")[1])).toMatchObject({ code: "service_unavailable" });
    expect(logged.some((l) => l.path.endsWith("/events"))).toBe(true);
    await proxy.restore();
    hold.open();
    await asked.catch(() => undefined);
  });
});
