import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiPrincipal, type Principal } from "../../../lib/auth/principal.js";
import { AuditLog } from "../../../lib/audit/audit-log.js";
import { COLLECTIONS } from "../../../lib/store/collections.js";
import { startTestServer, type TestServer } from "../../support/api-client.js";
import { startHostileServer } from "../../support/mcp-servers.js";
import { startOAuthMcpServer, type OAuthMcpServer } from "../../support/oauth-mcp-server.js";

let t: TestServer;
let rs: OAuthMcpServer;

beforeAll(async () => {
  [t, rs] = await Promise.all([startTestServer(), startOAuthMcpServer()]);
});
afterAll(async () => {
  await rs?.close();
  await t?.close();
});

const scopeOf = (tenant: string | null, url = rs.mcpUrl) => ({
  tenant,
  server: { name: "crm", transport: { kind: "streamable-http" as const, url }, auth: { kind: "oauth" as const } },
});
const tokens = () => t.db.collection(COLLECTIONS.mcpOAuthTokens);

/** One use of the server's `whoami` tool as the MCP client makes it: a provider for this principal, the SDK's client and transport. */
async function whoami(principal: Principal, tenant: string | null = principal.tenant, url = rs.mcpUrl): Promise<{ user?: string; signIn?: URL }> {
  const provider = t.server.mcpOAuth.providerFor(principal, scopeOf(tenant, url));
  const client = new Client({ name: "mcp-oauth-test", version: "1.0.0" });
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { authProvider: provider }));
  } catch (error) {
    if (error instanceof UnauthorizedError) return { signIn: provider.authorizationUrl() };
    throw error;
  }
  try {
    const result = (await client.callTool({ name: "whoami", arguments: {} })) as { content: { text: string }[] };
    return { user: result.content[0].text };
  } finally {
    await client.close();
  }
}

/** The sign-in a principal is asked for, done in the browser as `user` of the authorization server; returns the callback's URL. */
async function signInAs(principal: Principal, user: string, options: { deny?: boolean } = {}): Promise<string> {
  const { signIn } = await whoami(principal);
  expect(signIn, "a sign-in link").toBeDefined();
  return rs.signIn(signIn as URL, user, options);
}

const callback = async (url: string) => {
  const path = url.slice(t.url.length);
  expect(url.startsWith(`${t.url}/v1/mcp/oauth/callback?`)).toBe(true);
  return t.call("GET", path);
};

/** The browser's return to the callback, then `as` giving the code it showed in their conversation (the sign-in tool does this). */
async function finish(as: Principal, url: string, tenant: string | null = as.tenant): Promise<string> {
  const back = await callback(url);
  expect(back.status).toBe(200);
  expect(back.body).toMatchObject({ status: "confirm", server: "crm", code: expect.stringMatching(/^[A-Z2-9]{4}-[A-Z2-9]{4}$/) });
  return t.server.mcpOAuth.providerFor(as, scopeOf(tenant)).confirmSignIn(back.body.code as string);
}

describe("McpOAuth", () => {
  describe("providerFor", () => {
    it("returns each user's own token, two users and two tokens never crossed, and no token for the same subject in another tenant", async () => {
      const alice = apiPrincipal("alice", "acme");
      const bob = apiPrincipal("bob", "acme");
      expect(await finish(alice, await signInAs(alice, "alice"))).toBe("confirmed");
      expect(await finish(bob, await signInAs(bob, "bob"))).toBe("confirmed");
      rs.calls.length = 0;
      expect(await whoami(alice)).toEqual({ user: "alice" });
      expect(await whoami(bob)).toEqual({ user: "bob" });
      expect(await whoami(alice)).toEqual({ user: "alice" });
      expect(rs.calls).toEqual(["alice", "bob", "alice"]);
      // The same subject elsewhere is another principal: asked to sign in, never given alice's token.
      expect((await whoami(apiPrincipal("alice", "globex"))).signIn).toBeDefined();
      expect((await whoami(alice, "other-entry")).signIn).toBeDefined();
      expect(rs.calls).toEqual(["alice", "bob", "alice"]);
    });

    it("stores tokens sealed: no token in the document, and one moved to another user's record does not open", async () => {
      const erin = apiPrincipal("erin", "acme");
      const frank = apiPrincipal("frank", "acme");
      await finish(erin, await signInAs(erin, "erin"));
      await finish(frank, await signInAs(frank, "frank"));
      const [erinDoc, frankDoc] = await Promise.all([tokens().findOne({ subject: "erin" }), tokens().findOne({ subject: "frank" })]);
      expect(JSON.stringify(erinDoc)).not.toMatch(/eyJ|access_token|refresh_token/);
      await tokens().updateOne({ _id: frankDoc?._id }, { $set: { sealed: erinDoc?.sealed } });
      const asFrank = await whoami(frank);
      expect(asFrank.user).toBeUndefined();
      expect(asFrank.signIn).toBeDefined();
      expect(rs.calls.at(-1)).not.toBe("erin");
    });

    it("never sends a user's token to the URL an entry was re-pointed at, and sends it again at the URL it was issued for", async () => {
      const bob = apiPrincipal("bob-repoint", "acme");
      await finish(bob, await signInAs(bob, "bob-repoint"));
      expect(await whoami(bob)).toEqual({ user: "bob-repoint" });
      // An admin points `crm` at another server: it gets no token of bob's (today's key by name alone sent it).
      const elsewhere = await startHostileServer();
      try {
        const client = new Client({ name: "mcp-oauth-test", version: "1.0.0" });
        const provider = t.server.mcpOAuth.providerFor(bob, scopeOf("acme", elsewhere.url));
        await client.connect(new StreamableHTTPClientTransport(new URL(elsewhere.url), { authProvider: provider }));
        await client.listTools();
        await client.close();
        expect(elsewhere.seenAuthorization.length).toBeGreaterThan(0);
        expect(elsewhere.seenAuthorization.filter((a) => a !== undefined)).toEqual([]);
      } finally {
        await elsewhere.stop();
      }
      expect(await whoami(bob)).toEqual({ user: "bob-repoint" });
    });

    it("refreshes an expired access token and stores the new one", async () => {
      const carol = apiPrincipal("carol", "acme");
      rs.accessTtlSeconds = -60;
      await finish(carol, await signInAs(carol, "carol"));
      rs.accessTtlSeconds = 3600;
      const before = await tokens().findOne({ subject: "carol" });
      const refreshes = rs.grants.refresh_token;
      expect(await whoami(carol)).toEqual({ user: "carol" });
      expect(rs.grants.refresh_token).toBe(refreshes + 1);
      const after = await tokens().findOne({ subject: "carol" });
      expect(after?.sealed.data).not.toBe(before?.sealed.data);
      expect(await whoami(carol)).toEqual({ user: "carol" });
      expect(rs.grants.refresh_token).toBe(refreshes + 1);
    });

    it("returns a sign-in link again once the tokens are revoked, and deletes them", async () => {
      const dave = apiPrincipal("dave", "acme");
      await finish(dave, await signInAs(dave, "dave"));
      expect(await whoami(dave)).toEqual({ user: "dave" });
      rs.revoke("dave");
      const again = await whoami(dave);
      expect(again.user).toBeUndefined();
      expect(again.signIn?.origin).toBe(rs.url);
      expect(await tokens().countDocuments({ subject: "dave" })).toBe(0);
      await finish(dave, await rs.signIn(again.signIn as URL, "dave"));
      expect(await whoami(dave)).toEqual({ user: "dave" });
    });
  });

  describe("deleteUserData and revoke", () => {
    it("deletes one principal's tokens and pending sign-ins, and nobody else's", async () => {
      const gina = apiPrincipal("gina", "acme");
      const hal = apiPrincipal("hal", "acme");
      await finish(gina, await signInAs(gina, "gina"));
      await finish(hal, await signInAs(hal, "hal"));
      await whoami(apiPrincipal("gina", "acme"), "pending-entry");
      expect(await t.server.mcpOAuth.deleteUserData(gina)).toBe(1);
      expect(await tokens().countDocuments({ subject: "gina" })).toBe(0);
      expect(await t.db.collection(COLLECTIONS.mcpOAuthSignIns).countDocuments({ "principal.subject": "gina" })).toBe(0);
      expect(await whoami(hal)).toEqual({ user: "hal" });
      expect(await t.server.mcpOAuth.revoke(hal, "acme", "crm")).toBe(true);
      expect((await whoami(hal)).signIn).toBeDefined();
    });
  });

  describe("confirmSignIn", () => {
    it("finishes a sign-in only for the user who started it: bob opening alice's link signs alice in as nobody", async () => {
      const alice = apiPrincipal("alice-link", "acme");
      const bob = apiPrincipal("bob-link", "acme");
      // Alice asks for a link; bob opens it and signs in at the CRM as himself.
      const back = await callback(await signInAs(alice, "bob-link"));
      expect(back.status).toBe(200);
      const code = back.body.code as string;
      // Today's callback stored bob's tokens for alice here: alice's whoami answered "bob-link".
      expect((await whoami(alice)).user).toBeUndefined();
      // Bob gives the code in his own conversation: no sign-in of his waits, nothing is stored for him or for alice.
      expect(await t.server.mcpOAuth.providerFor(bob, scopeOf("acme")).confirmSignIn(code)).toBe("none_waiting");
      expect(await tokens().countDocuments({ subject: { $in: ["alice-link", "bob-link"] } })).toBe(0);
      // Alice guessing codes: a few wrong ones drop the held sign-in, and the right one then finds nothing.
      const asAlice = t.server.mcpOAuth.providerFor(alice, scopeOf("acme"));
      for (let i = 0; i < 5; i++) expect(await asAlice.confirmSignIn("AAAA-AAAA")).toBe("wrong_code");
      expect(await asAlice.confirmSignIn(code)).toBe("none_waiting");
      expect((await whoami(alice)).user).toBeUndefined();
      expect(rs.calls).not.toContain("bob-link");
    });

    it("finishes with the right code, once, for the user who started it, in any case and spacing", async () => {
      const lee = apiPrincipal("lee", "acme");
      const back = await callback(await signInAs(lee, "lee"));
      const code = (back.body.code as string).toLowerCase().replace("-", " ");
      const provider = t.server.mcpOAuth.providerFor(lee, scopeOf("acme"));
      expect(await provider.confirmSignIn(code)).toBe("confirmed");
      expect(await provider.confirmSignIn(code)).toBe("none_waiting");
      expect(await whoami(lee)).toEqual({ user: "lee" });
    });

    it("records a completed sign-in in the user's tenant's audit chain, with no token or code, and none for a sign-in never confirmed", async () => {
      const kit = apiPrincipal("kit", "audited");
      const back = await callback(await signInAs(kit, "kit"));
      const code = back.body.code as string;
      const audit = () => t.db.collection(COLLECTIONS.auditLog).find({ action: "sign_in.mcp", "actor.subject": "kit" }).toArray();
      expect(await audit()).toEqual([]);
      expect(await t.server.mcpOAuth.providerFor(kit, scopeOf("audited")).confirmSignIn(code)).toBe("confirmed");
      const records = await audit();
      expect(records.map((r) => [r.actor, r.tenant, r.resource, r.channel])).toEqual([
        [{ issuer: "api", tenant: "audited", subject: "kit" }, { issuer: "api", tenant: "audited" }, { server: "crm" }, "api"],
      ]);
      const stored = JSON.stringify(records);
      expect(stored).not.toContain(code);
      expect(stored).not.toMatch(/eyJ|access_token|refresh_token/);
      expect((await new AuditLog(t.db, { retentionDays: 1 }).verify({ issuer: "api", tenant: "audited" })).problems).toEqual([]);
    });

    it("keeps held tokens sealed under their own associated data: copied into the user's record they do not open", async () => {
      const mo = apiPrincipal("mo", "acme");
      await callback(await signInAs(mo, "mo"));
      const held = await t.db.collection(COLLECTIONS.mcpOAuthSignIns).findOne({ "principal.subject": "mo", sealed: { $exists: true } });
      expect(JSON.stringify(held)).not.toMatch(/eyJ|access_token/);
      await tokens().insertOne({ _id: "forged" as never, issuer: "api", tenant: "acme", subject: "mo", server: "crm", sealed: held?.sealed });
      expect((await whoami(mo)).user).toBeUndefined();
    });
  });

  describe("GET /v1/mcp/oauth/callback", () => {
    it("answers 400 sign_in_unknown to a replayed callback, and stores nothing more", async () => {
      const ivy = apiPrincipal("ivy", "acme");
      const url = await signInAs(ivy, "ivy");
      expect((await callback(url)).status).toBe(200);
      const codes = rs.grants.authorization_code;
      const replay = await callback(url);
      expect(replay.status).toBe(400);
      expect(replay.body.error.code).toBe("sign_in_unknown");
      expect(rs.grants.authorization_code).toBe(codes);
    });

    it("answers 400 sign_in_expired past the link's time, and the link is used up", async () => {
      const url = await signInAs(apiPrincipal("jack", "acme"), "jack");
      await t.db.collection(COLLECTIONS.mcpOAuthSignIns).updateMany({ "principal.subject": "jack" }, { $set: { expiresAt: new Date(Date.now() - 1000) } });
      const late = await callback(url);
      expect(late.status).toBe(400);
      expect(late.body.error.code).toBe("sign_in_expired");
      expect((await callback(url)).body.error.code).toBe("sign_in_unknown");
      expect(await tokens().countDocuments({ subject: "jack" })).toBe(0);
    });

    it("answers 400 sign_in_denied when the user declined, 400 to a state never issued, and 400 without a state", async () => {
      const denied = await callback(await signInAs(apiPrincipal("kim", "acme"), "kim", { deny: true }));
      expect(denied.body.error.code).toBe("sign_in_denied");
      expect((await t.call("GET", "/v1/mcp/oauth/callback?state=forged&code=abc")).body.error.code).toBe("sign_in_unknown");
      expect((await t.call("GET", "/v1/mcp/oauth/callback?code=abc")).status).toBe(400);
      expect(await tokens().countDocuments({ subject: "kim" })).toBe(0);
    });
  });
});
