import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuditLog } from "../../lib/audit/audit-log.js";
import { COLLECTIONS } from "../../lib/store/collections.js";
import { startTestServer, type TestServer } from "../support/api-client.js";

/** node:http, because fetch will not send a Host header of the caller's choosing. */
function postWithHost(url: string, host: string, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/local/token`, { method: "POST", headers: { host, "content-type": "application/json" } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", reject);
    req.end(body);
  });
}

describe("startLocalServer", () => {
  let t: TestServer;

  beforeAll(async () => {
    t = await startTestServer();
  });

  afterAll(async () => {
    await t?.close();
  });

  describe("POST /local/token", () => {
    it("returns a token the API accepts as that user and tenant", async () => {
      const minted = await t.call("POST", "/local/token", { json: { user: "carol", tenant: "acme" } });
      expect(minted.status).toBe(200);
      expect(minted.body).toMatchObject({ userId: "carol", tenantId: "acme" });
      expect(minted.headers.get("cache-control")).toBe("no-store");

      const created = await t.call("POST", "/v1/conversations", { token: minted.body.token });
      const asCarol = await t.call("GET", "/v1/conversations", { token: minted.body.token });
      const asCarolElsewhere = await t.call("GET", "/v1/conversations", { token: await t.token("carol", { tenant: "globex" }) });

      expect(created.status).toBe(201);
      expect(asCarol.body.conversations.map((c: { conversationId: string }) => c.conversationId)).toEqual([created.body.conversationId]);
      expect(asCarolElsewhere.body.conversations).toEqual([]);
    });

    it("records the sign-in in the user's tenant's audit chain with its roles, never the token", async () => {
      const minted = await t.call("POST", "/local/token", { json: { user: "dana", tenant: "signins", roles: ["analyst"] } });
      expect(minted.status).toBe(200);
      const records = await t.db.collection(COLLECTIONS.auditLog).find({ action: "sign_in.local_token", "actor.subject": "dana" }).toArray();
      expect(records.map((r) => [r.actor, r.tenant, r.channel, r.detail])).toEqual([
        [{ issuer: "api", tenant: "signins", subject: "dana" }, { issuer: "api", tenant: "signins" }, "api", { roles: ["analyst"] }],
      ]);
      expect(JSON.stringify(records)).not.toContain(minted.body.token);
      expect((await new AuditLog(t.db, { retentionDays: 1 }).verify({ issuer: "api", tenant: "signins" })).problems).toEqual([]);
    });

    it("throws when the body is not sent as JSON (415)", async () => {
      const res = await t.call("POST", "/local/token", { body: JSON.stringify({ user: "carol" }), headers: { "content-type": "text/plain" } });

      expect(res.status).toBe(415);
    });

    it("throws when the Host is not a loopback name (401)", async () => {
      expect(await postWithHost(t.url, "rebound.example:3000", '{"user":"carol"}')).toBe(401);
      expect(await postWithHost(t.url, "localhost:3000", '{"user":"carol"}')).toBe(200);
    });

    it("throws when the user name is not a plain principal (400)", async () => {
      const res = await t.call("POST", "/local/token", { json: { user: "carol smith" } });

      expect(res.status).toBe(400);
    });
  });
});
