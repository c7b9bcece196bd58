import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mcpOAuthRoutes } from "../../lib/api/mcp-oauth-routes.js";
import { createRouter } from "../../lib/api/router.js";
import { LocalDataKeySource } from "../../lib/mcp/oauth/local-data-key-source.js";
import { McpOAuth } from "../../lib/mcp/oauth/mcp-oauth.js";
import { openTestDatabase, type TestDatabase } from "../support/mongo.js";

let t: TestDatabase;
let route: ReturnType<typeof createRouter>;

beforeAll(async () => {
  t = await openTestDatabase("mcp_oauth_routes");
  const keys = new LocalDataKeySource(await mkdtemp(join(tmpdir(), "tw-mcp-key-")));
  route = createRouter(mcpOAuthRoutes(new McpOAuth({ db: t.db, keys, redirectUrl: "https://a.example.com/cb", retentionMs: 1 })));
});
afterAll(() => t.cleanup());

const get = (query: Record<string, string>) => route({ method: "GET", path: "/v1/mcp/oauth/callback", headers: {}, query });

describe("mcpOAuthRoutes", () => {
  describe("GET /v1/mcp/oauth/callback", () => {
    it("answers 400 invalid_request to a query parameter it does not take, and to an empty state", async () => {
      expect(JSON.parse((await get({ state: "s", code: "c", extra: "x" })).body).error.code).toBe("invalid_request");
      expect((await get({ state: "", code: "c" })).status).toBe(400);
    });

    it("answers 400 sign_in_unknown to a state never issued, without a body that names it", async () => {
      const res = await get({ state: "never-issued", code: "c" });
      expect(res.status).toBe(400);
      expect(JSON.parse(res.body).error.code).toBe("sign_in_unknown");
      expect(res.body).not.toContain("never-issued");
    });
  });
});
