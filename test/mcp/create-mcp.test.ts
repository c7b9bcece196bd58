import { describe, expect, it } from "vitest";
import { apiPrincipal } from "../../lib/auth/principal.js";
import { loadMcpConfig } from "../../lib/config/mcp-servers-config.js";
import { createMcp } from "../../lib/mcp/create-mcp.js";
import { useTestDatabase } from "../support/store-fixture.js";

const database = useTestDatabase("mcp_create");
const entry = (name: string) => ({ name, transport: { kind: "streamable-http" as const, url: `https://${name}.example/mcp` } });

describe("createMcp", () => {
  describe("serversOf", () => {
    it("returns the configured servers and the caller's tenant's own, not another tenant's", async () => {
      const mcp = createMcp(database.db, loadMcpConfig({ MCP_SERVERS: JSON.stringify([entry("wiki")]) }), { secrets: { get: async () => undefined } });
      await mcp.store.put({ issuer: "api", tenant: "acme" }, entry("crm"), "root");
      const acme = await mcp.serversOf({ principal: apiPrincipal("alice", "acme"), roles: [] });
      const globex = await mcp.serversOf({ principal: apiPrincipal("gina", "globex"), roles: [] });
      expect(acme.map((s) => s.name)).toEqual(["crm", "wiki"]);
      expect(globex.map((s) => s.name)).toEqual(["wiki"]);
      await mcp.close();
    });
  });
});
