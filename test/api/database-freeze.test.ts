import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import type { MongoClient } from "mongodb";
import { createApp } from "../../lib/app.js";
import { createHttpHandler } from "../../lib/api/http-handler.js";
import { loadConfig } from "../../lib/config/config.js";
import type { HttpRequest, HttpResponse } from "../../lib/api/http.js";
import { createMongoClient } from "../../lib/store/mongo-client.js";
import { apiPrincipal, type Caller } from "../../lib/auth/principal.js";
import type { ToolDefinition } from "../../lib/tools/tool.js";
import { dropKnownCollections } from "../support/drop-collections.js";
import { mongoUri } from "../support/mongo.js";
import { parseEvents, type SseEvent } from "../support/sse-client.js";
import { startTcpProxy, type TcpProxy } from "../support/tcp-proxy.js";

const CONVERSATIONS = 4;
const caller: Caller = { principal: apiPrincipal("freeze-user"), roles: [] };
let proxy: TcpProxy;
let client: MongoClient;
let app: { route: (request: HttpRequest) => Promise<HttpResponse> };
const dbName = `freeze_${randomUUID().slice(0, 8)}`;

/** Holds every turn inside its tool until the test lets them all go: the database goes away while they run. */
let arrived = 0;
let allArrived!: () => void;
const allHeld = new Promise<void>((resolve) => (allArrived = resolve));
let letGo!: () => void;
const released = new Promise<void>((resolve) => (letGo = resolve));
const holdTool: ToolDefinition = {
  name: "hold_turn",
  description: "Waits for the test.",
  schema: z.object({}),
  sideEffects: false,
  run: async () => {
    arrived += 1;
    if (arrived === CONVERSATIONS) allArrived();
    await released;
    return "held";
  },
};

function request(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): HttpRequest {
  return { method, path, headers: { "content-type": "application/json", ...headers }, query: {}, body: body === undefined ? undefined : JSON.stringify(body) };
}

async function readAll(response: HttpResponse): Promise<SseEvent[]> {
  let text = "";
  for await (const piece of response.stream!(new AbortController().signal)) text += piece;
  return parseEvents(text);
}

beforeAll(async () => {
  proxy = await startTcpProxy(Number(new URL(mongoUri().replace("mongodb://", "http://")).port));
  const uri = `mongodb://127.0.0.1:${proxy.port}/?directConnection=true`;
  client = createMongoClient(uri, { serverSelectionTimeoutMs: 800 });
  await client.connect();
  // The default lease TTL (120 s): a conversation left locked by the outage would stay so for the rest of the test.
  const config = loadConfig({ MONGODB_URI: uri, MONGODB_DB: dbName });
  const made = await createApp(config, { mongoClient: client, tools: [holdTool] });
  app = { route: createHttpHandler(made, config, { authenticate: async () => caller, onError: () => undefined }) };
});
afterAll(async () => {
  await proxy.restore().catch(() => undefined);
  await dropKnownCollections(client.db(dbName));
  await client.close();
  await proxy.close();
});

describe("the API when the database goes away under running turns", () => {
  it("ends each open stream failed, and frees every conversation within seconds of the database answering again", async () => {
    const ids: string[] = [];
    for (let i = 0; i < CONVERSATIONS; i++) ids.push(JSON.parse((await app.route(request("POST", "/v1/conversations"))).body).conversationId);
    const post = (id: string) =>
      app.route(request("POST", `/v1/conversations/${id}/messages`, { content: "hold_turn {}" }, { "idempotency-key": `freeze-${id}` }));
    const asked = ids.map(post);
    await allHeld;
    // A stream follows each running turn, as a client that asked with Accept: text/event-stream does.
    const follows = await Promise.all(
      ids.map(async (id) => {
        const turn = await client.db(dbName).collection("turns").findOne({ conversationId: id });
        return app.route({
          ...request("GET", `/v1/conversations/${id}/turns/${turn!._id}/events`, undefined, { accept: "text/event-stream" }),
          canStream: true,
        });
      }),
    );
    expect(follows.map((f) => f.status)).toEqual(ids.map(() => 200));
    const events = follows.map(readAll);

    await proxy.cut();
    letGo();
    // What each client sees of the outage: 503 with Retry-After, and its stream ends failed with the API's code, never cut or `done`.
    for (const answered of await Promise.all(asked)) {
      expect(answered.status).toBe(503);
      expect(JSON.parse(answered.body).error.code).toBe("service_unavailable");
      expect(Number(answered.headers["retry-after"])).toBeGreaterThan(0);
    }
    for (const seen of await Promise.all(events)) {
      expect(seen.at(-1)).toMatchObject({ event: "failed", data: { code: "service_unavailable" } });
    }

    await proxy.restore();
    await vi.waitFor(async () => expect((await app.route(request("GET", "/v1/conversations"))).status).toBe(200), { timeout: 10_000, interval: 100 });
    const back = Date.now();
    // Each attempt marks its turn as its error says once the database answers, and gives the conversation back.
    await vi.waitFor(
      async () => {
        const turns = await client
          .db(dbName)
          .collection("turns")
          .find({ conversationId: { $in: ids } })
          .toArray();
        expect(turns.map((t) => [t.status, t.error?.code])).toEqual(ids.map(() => ["failed", "service_unavailable"]));
      },
      { timeout: 5_000, interval: 100 },
    );

    // The client retries after Retry-After, with its key: every conversation takes it within seconds, not the lease's 120 s.
    const statuses = await Promise.all(
      ids.map(async (id) => {
        const seen: number[] = [];
        await vi.waitFor(
          async () => {
            const retried = await post(id);
            seen.push(retried.status);
            expect(retried.status).toBe(200);
          },
          { timeout: 5_000, interval: 250 },
        );
        return seen;
      }),
    );
    expect(Date.now() - back).toBeLessThan(5_000);
    for (const seen of statuses) expect(seen.at(-1)).toBe(200);

    // The stored turns: each answered once, its question and answer in the record once.
    const turns = await client
      .db(dbName)
      .collection("turns")
      .find({ conversationId: { $in: ids } })
      .toArray();
    expect(turns.map((t) => t.status)).toEqual(ids.map(() => "completed"));
    for (const id of ids) {
      const record = JSON.parse((await app.route(request("GET", `/v1/conversations/${id}/messages`))).body).messages;
      expect(record.map((m: { role: string }) => m.role)).toEqual(["user", "assistant"]);
    }
  });
});
