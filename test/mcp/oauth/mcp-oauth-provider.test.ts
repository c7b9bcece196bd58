import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiPrincipal } from "../../../lib/auth/principal.js";
import { LocalDataKeySource } from "../../../lib/mcp/oauth/local-data-key-source.js";
import { McpOAuth } from "../../../lib/mcp/oauth/mcp-oauth.js";
import { COLLECTIONS } from "../../../lib/store/collections.js";
import { openTestDatabase, type TestDatabase } from "../../support/mongo.js";

let t: TestDatabase;
let oauth: McpOAuth;
const server = (auth: { clientId?: string; clientSecretName?: string } = {}) => ({
  tenant: "acme",
  server: { name: "crm", transport: { kind: "streamable-http" as const, url: "http://crm.invalid/mcp" }, auth: { kind: "oauth" as const, ...auth } },
});

beforeAll(async () => {
  t = await openTestDatabase("mcp_oauth_provider");
  oauth = new McpOAuth({
    db: t.db,
    keys: new LocalDataKeySource(await mkdtemp(join(tmpdir(), "tw-mcp-key-"))),
    redirectUrl: "https://api.example.com/v1/mcp/oauth/callback",
    retentionMs: 86_400_000,
    secrets: { get: async (name) => (name === "mcp/api/acme/crm-client-secret" ? "s3cret" : name === "crm-client-secret" ? "core" : undefined) },
  });
  await oauth.store.setup();
});
afterAll(() => t.cleanup());

describe("McpOAuthProvider", () => {
  describe("redirectToAuthorization", () => {
    it("stores the sign-in for its principal with the saved verifier, expiring, and keeps the link for authorizationUrl", async () => {
      const provider = oauth.providerFor(apiPrincipal("alice", "acme"), server());
      expect(provider.authorizationUrl()).toBeUndefined();
      provider.saveCodeVerifier("verifier-1");
      const url = new URL(`https://as.example.com/authorize?state=${provider.state()}`);
      await provider.redirectToAuthorization(url);
      expect(provider.authorizationUrl()).toBe(url);
      const [doc] = await t.db.collection(COLLECTIONS.mcpOAuthSignIns).find().toArray();
      expect(doc).toMatchObject({ principal: { issuer: "api", tenant: "acme", subject: "alice" }, codeVerifier: "verifier-1", server: { name: "crm" } });
      expect(doc.expiresAt.getTime()).toBeGreaterThan(Date.now());
    });

    it("throws for a link without state, storing nothing", async () => {
      const provider = oauth.providerFor(apiPrincipal("bob", "acme"), server());
      provider.saveCodeVerifier("v");
      await expect(provider.redirectToAuthorization(new URL("https://as.example.com/authorize"))).rejects.toThrow(/state/);
      expect(await t.db.collection(COLLECTIONS.mcpOAuthSignIns).countDocuments({ "principal.subject": "bob" })).toBe(0);
    });
  });

  describe("clientInformation", () => {
    it("returns the configured client with its secret from the secret source, and registers none", async () => {
      // The MCP client hands over the secret's key under its owner's prefix (lib/mcp/mcp-secrets.ts).
      const provider = oauth.providerFor(apiPrincipal("alice", "acme"), server({ clientId: "tw", clientSecretName: "mcp/api/acme/crm-client-secret" }));
      expect(await provider.clientInformation()).toEqual({ client_id: "tw", client_secret: "s3cret" });
      const outside = oauth.providerFor(apiPrincipal("alice", "acme"), server({ clientId: "tw", clientSecretName: "crm-client-secret" }));
      expect(await outside.clientInformation()).toEqual({ client_id: "tw" });
      expect(provider.clientMetadata).toMatchObject({ redirect_uris: ["https://api.example.com/v1/mcp/oauth/callback"], token_endpoint_auth_method: "none" });
    });
  });

  describe("state", () => {
    it("returns one unguessable state per provider", () => {
      const a = oauth.providerFor(apiPrincipal("alice", "acme"), server());
      const b = oauth.providerFor(apiPrincipal("alice", "acme"), server());
      expect(a.state()).toBe(a.state());
      expect(a.state()).not.toBe(b.state());
      expect(a.state().length).toBeGreaterThanOrEqual(43);
    });
  });
});
