import { randomUUID } from "node:crypto";
import { createApp } from "../lib/app.js";
import { loadConfig } from "../lib/config/config.js";
import { createMongoClient } from "../lib/store/mongo-client.js";
import { dropKnownCollections } from "./support/drop-collections.js";
import { mongoUri } from "./support/mongo.js";
import { useTestDatabase } from "./support/store-fixture.js";
import { startTcpProxy } from "./support/tcp-proxy.js";

// The HTTP API over an app (liveness, readiness, set-up on first use) is tested in test/api/http-handler.test.ts.
// The app makes its own database; this client inspects it.
const inspector = useTestDatabase("app", { clearBeforeEach: false });

describe("createApp", () => {
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
      // Set up once: the indexes' record and the schema version's (lib/store/migrations).
      expect(await inspector.client.db(dbName).collection("setup").countDocuments()).toBe(2);
      await dropKnownCollections(inspector.client.db(dbName));
      await client.close();
      await proxy.close();
    });
  });
});
