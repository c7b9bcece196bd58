import { describe, expect, it } from "vitest";
import { McpServerStore } from "../../lib/mcp/mcp-server-store.js";
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
  });

  describe("remove", () => {
    it("returns false for a name the tenant has not", async () => {
      const store = new McpServerStore(database.db, { cacheMs: 0 });
      expect(await store.remove(acme, "nothing")).toBe(false);
    });
  });
});
