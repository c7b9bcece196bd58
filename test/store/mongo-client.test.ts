import { describe, expect, it } from "vitest";
import { DEFAULT_SERVER_SELECTION_TIMEOUT_MS, DEFAULT_SOCKET_TIMEOUT_MS } from "../../lib/config/config.js";
import { createMongoClient, DEFAULT_CONNECT_TIMEOUT_MS } from "../../lib/store/mongo-client.js";
import { mongoUri } from "../support/mongo.js";

describe("createMongoClient", () => {
  it("returns a client with the house's defaults: polled monitoring, the configured timeouts, the driver's pool", () => {
    const { options } = createMongoClient(mongoUri());
    expect(options).toMatchObject({
      appName: "threadwise",
      serverSelectionTimeoutMS: DEFAULT_SERVER_SELECTION_TIMEOUT_MS,
      socketTimeoutMS: DEFAULT_SOCKET_TIMEOUT_MS,
      connectTimeoutMS: DEFAULT_CONNECT_TIMEOUT_MS,
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
});
