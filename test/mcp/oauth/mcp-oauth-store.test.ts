import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiPrincipal } from "../../../lib/auth/principal.js";
import { McpOAuthStore, tokenKey } from "../../../lib/mcp/oauth/mcp-oauth-store.js";
import { COLLECTIONS } from "../../../lib/store/collections.js";
import { openTestDatabase, type TestDatabase } from "../../support/mongo.js";

let t: TestDatabase;
let store: McpOAuthStore;
const sealed = { v: 1 as const, key: "k", iv: "i", tag: "t", data: "d" };
const pending = (subject: string) => ({
  principal: apiPrincipal(subject, "acme"),
  tenant: "acme",
  server: { name: "crm", url: "http://crm.invalid/mcp" },
  codeVerifier: "v",
  expiresAt: new Date(Date.now() + 60_000),
});
const URL_A = "https://crm.example/mcp";
const tokens = (subject: string, server: string) => ({
  issuer: "api" as const,
  tenant: "acme",
  subject,
  server,
  url: URL_A,
  entryTenant: "acme",
  sealed,
  accessExpiresAt: null,
  updatedAt: new Date(),
  retainUntil: new Date(Date.now() + 86_400_000),
});

beforeAll(async () => {
  t = await openTestDatabase("mcp_oauth_store");
  store = new McpOAuthStore(t.db);
  await store.setup();
});
afterAll(() => t.cleanup());

describe("McpOAuthStore", () => {
  describe("tokenKey", () => {
    it("returns distinct keys for another subject, tenant, issuer, entry tenant, server or server URL", () => {
      const keys = [
        tokenKey(apiPrincipal("alice", "acme"), "acme", "crm", URL_A),
        tokenKey(apiPrincipal("bob", "acme"), "acme", "crm", URL_A),
        tokenKey(apiPrincipal("alice", "globex"), "acme", "crm", URL_A),
        tokenKey({ issuer: "slack", tenant: "acme", subject: "alice" }, "acme", "crm", URL_A),
        tokenKey(apiPrincipal("alice", "acme"), null, "crm", URL_A),
        tokenKey(apiPrincipal("alice", "acme"), "acme", "erp", URL_A),
        tokenKey(apiPrincipal("alice", "acme"), "acme", "crm", "https://other.example/mcp"),
      ];
      expect(new Set(keys).size).toBe(keys.length);
    });
  });

  describe("takePending", () => {
    it("returns a pending sign-in once, stored under the state's hash and never the state itself", async () => {
      await store.savePending("state-1", pending("alice"), new Date());
      expect(JSON.stringify(await t.db.collection(COLLECTIONS.mcpOAuthSignIns).find().toArray())).not.toContain("state-1");
      expect(await store.takePending("state-1")).toMatchObject({ principal: { subject: "alice" }, codeVerifier: "v" });
      expect(await store.takePending("state-1")).toBeNull();
    });

    it("returns one of two concurrent takes of the same state, and null to the other", async () => {
      await store.savePending("state-2", pending("alice"), new Date());
      const taken = await Promise.all([store.takePending("state-2"), store.takePending("state-2")]);
      expect(taken.filter((p) => p !== null)).toHaveLength(1);
    });
  });

  describe("deleteAllOf", () => {
    it("deletes every server's tokens and the pending sign-ins of one principal only", async () => {
      const alice = apiPrincipal("carol", "acme");
      await store.saveTokens(tokenKey(alice, "acme", "crm", URL_A), tokens("carol", "crm"));
      await store.saveTokens(tokenKey(alice, "acme", "erp", URL_A), tokens("carol", "erp"));
      await store.saveTokens(tokenKey(apiPrincipal("dan", "acme"), "acme", "crm", URL_A), tokens("dan", "crm"));
      await store.savePending("state-3", pending("carol"), new Date());
      expect(await store.deleteAllOf(alice)).toBe(2);
      expect(await store.takePending("state-3")).toBeNull();
      expect(await store.loadTokens(tokenKey(apiPrincipal("dan", "acme"), "acme", "crm", URL_A))).not.toBeNull();
    });
  });
});
