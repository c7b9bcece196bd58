import { MongoClient } from "mongodb";
import { describe, expect, it } from "vitest";
import { McpServerStore } from "../../lib/mcp/mcp-server-store.js";
import { COLLECTIONS } from "../../lib/store/collections.js";
import { mongoUri } from "../support/mongo.js";
import { useTestDatabase } from "../support/store-fixture.js";

const database = useTestDatabase("mcp_store");
const acme = { issuer: "api", tenant: "acme" } as const;
const entry = (name: string, url = "https://a.example/mcp") => ({ name, transport: { kind: "streamable-http" as const, url } });

describe("McpServerStore", () => {
  describe("put", () => {
    it("returns the entry replaced under the same tenant and name, and another tenant sees none of it", async () => {
      const store = new McpServerStore(database.db, { cacheMs: 0 });
      await store.put(acme, entry("wiki"), "root");
      await store.put(acme, entry("wiki", "https://b.example/mcp"), "root");
      expect((await store.entriesOf(acme)).map((e) => e.transport)).toEqual([{ kind: "streamable-http", url: "https://b.example/mcp" }]);
      expect(await store.entriesOf({ issuer: "slack", tenant: "acme" })).toEqual([]);
    });
  });

  describe("entriesOf", () => {
    it("returns the cached entries within cacheMs, and what another container wrote after it", async () => {
      let now = 0;
      const reader = new McpServerStore(database.db, { cacheMs: 30_000, now: () => now });
      const writer = new McpServerStore(database.db, { cacheMs: 30_000 });
      expect(await reader.entriesOf(acme)).toEqual([]);
      await writer.put(acme, entry("crm"), "root");
      expect(await reader.entriesOf(acme)).toEqual([]);
      now += 30_000;
      expect((await reader.entriesOf(acme)).map((e) => e.name)).toEqual(["crm"]);
    });

    it("keeps its cache within cacheBytes over many tenants: the most recent still hit, an evicted one is read again, correctly", async () => {
      const monitored = new MongoClient(mongoUri(), { monitorCommands: true });
      let reads = 0;
      monitored.on("commandStarted", (e) => {
        if (e.commandName === "find" && e.command.find === COLLECTIONS.mcpServers) reads += 1;
      });
      try {
        const cacheBytes = 8_192;
        const store = new McpServerStore(monitored.db(database.dbName), { cacheMs: 60_000, cacheBytes, now: () => 0 });
        const tenant = (i: number) => ({ issuer: "api", tenant: `tenant-${i}` }) as const;
        await store.put(tenant(0), entry("wiki", "https://t0.example/mcp"), "root");
        for (let i = 0; i < 200; i++) await store.entriesOf(tenant(i));
        expect(reads).toBe(200);
        expect(store.cachedBytes).toBeGreaterThan(0);
        expect(store.cachedBytes).toBeLessThanOrEqual(cacheBytes);
        for (let i = 190; i < 200; i++) await store.entriesOf(tenant(i));
        expect(reads).toBe(200);
        expect(await store.entriesOf(tenant(0))).toEqual([entry("wiki", "https://t0.example/mcp")]);
        expect(reads).toBe(201);
      } finally {
        await monitored.close();
      }
    });
  });

  describe("remove", () => {
    it("returns false for a name the tenant has not", async () => {
      const store = new McpServerStore(database.db, { cacheMs: 0 });
      expect(await store.remove(acme, "nothing")).toBe(false);
    });
  });
});
