import { describe, expect, it } from "vitest";
import { DEFAULT_SERVER_SELECTION_TIMEOUT_MS, DEFAULT_SOCKET_TIMEOUT_MS } from "../../lib/config/database-config.js";
import { createMongoClient, DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_HEARTBEAT_FREQUENCY_MS } from "../../lib/store/mongo-client.js";
import { mongoUri } from "../support/mongo.js";
import { startTcpProxy } from "../support/tcp-proxy.js";

describe("createMongoClient", () => {
  it("returns a client with the house's defaults: polled monitoring, the configured timeouts, the driver's pool", () => {
    const { options } = createMongoClient(mongoUri());
    expect(options).toMatchObject({
      appName: "threadwise",
      serverSelectionTimeoutMS: DEFAULT_SERVER_SELECTION_TIMEOUT_MS,
      socketTimeoutMS: DEFAULT_SOCKET_TIMEOUT_MS,
      connectTimeoutMS: DEFAULT_CONNECT_TIMEOUT_MS,
      heartbeatFrequencyMS: DEFAULT_HEARTBEAT_FREQUENCY_MS,
      serverMonitoringMode: "poll",
      maxPoolSize: 100,
      maxIdleTimeMS: 0,
    });
  });

  it("returns a client with the timeouts, pool size and idle time given", () => {
    const { options } = createMongoClient(mongoUri(), { serverSelectionTimeoutMs: 300, socketTimeoutMs: 400, maxPoolSize: 2, maxIdleTimeMs: 60_000 });
    expect(options).toMatchObject({ serverSelectionTimeoutMS: 300, socketTimeoutMS: 400, maxPoolSize: 2, maxIdleTimeMS: 60_000 });
  });

  it("returns a client that connects on its first operation", async () => {
    const client = createMongoClient(mongoUri());
    try {
      expect(await client.db("admin").command({ ping: 1 })).toMatchObject({ ok: 1 });
    } finally {
      await client.close();
    }
  });

  it("returns the first answer after its pooled connections dropped silently within a heartbeat and its timeout, not two socket timeouts", async () => {
    const target = new URL(mongoUri().replace(/^mongodb:/, "http:"));
    const proxy = await startTcpProxy(Number(target.port));
    // A pool idle for less than maxIdleTimeMS: the connections are reused, and stale.
    const client = createMongoClient(`mongodb://127.0.0.1:${proxy.port}/?directConnection=true`, { maxPoolSize: 4, maxIdleTimeMs: 60_000 });
    try {
      const items = client.db("mongo_client_drop").collection("items");
      await Promise.all([items.findOne({}), items.findOne({}), items.countDocuments()]);
      proxy.dropSilently();
      const started = performance.now();
      expect(await items.findOne({})).toBeNull();
      const first = performance.now() - started;
      const next = performance.now();
      await items.findOne({});
      const nextMs = performance.now() - next;
      // At worst the drop comes just after a heartbeat: the next one times out and resets the pool (it was 20 s: two 10 s socket timeouts).
      const bound = DEFAULT_HEARTBEAT_FREQUENCY_MS + DEFAULT_CONNECT_TIMEOUT_MS + 1_000;
      expect({ first: first < bound, next: nextMs < 1_000 }).toEqual({ first: true, next: true });
    } finally {
      await client.close();
      await proxy.close();
    }
  }, 60_000);
});
