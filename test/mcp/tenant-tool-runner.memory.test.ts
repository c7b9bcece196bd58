import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiPrincipal, type Caller } from "../../lib/auth/principal.js";
import { loadMcpConfig, type McpServerEntry } from "../../lib/config/mcp-servers-config.js";
import { LOOPBACK_NETWORKS } from "../../lib/mcp/egress-fetch.js";
import { McpConnections } from "../../lib/mcp/mcp-connections.js";
import { McpToolCatalog } from "../../lib/mcp/mcp-tool-catalog.js";
import { TenantToolRunner } from "../../lib/mcp/tenant-tool-runner.js";
import { startHostileServer } from "../support/mcp-servers.js";

let hostile: Awaited<ReturnType<typeof startHostileServer>>;
const connections = new McpConnections({ secrets: { get: async () => undefined }, egress: { allow: LOOPBACK_NETWORKS } });

beforeAll(async () => {
  hostile = await startHostileServer();
});
afterAll(async () => {
  await connections.close();
  await hostile?.stop();
});

const caller = (tenant: string): Caller => ({ principal: apiPrincipal(`user-${tenant}`, tenant), roles: [] });

describe("TenantToolRunner", () => {
  describe("forCaller", () => {
    it("keeps its built runners within builtRunnerBytes over many tenants: the most recent are reused, an evicted one is built again and works", async () => {
      const builtRunnerBytes = 20_000;
      const entry: McpServerEntry = { name: "hostile", transport: { kind: "streamable-http", url: hostile.url }, tools: ["lookup"] };
      const catalog = new McpToolCatalog({ connections, config: loadMcpConfig({}), now: () => 1_000_000 });
      const runner = new TenantToolRunner({ tools: [], registry: {}, approvals: {}, catalog, servers: async () => [entry], builtRunnerBytes });
      const tenants = Array.from({ length: 30 }, (_, i) => `tenant-${i}`);
      const built = [];
      for (const tenant of tenants) built.push(await runner.forCaller(caller(tenant)));
      expect(runner.builtBytes).toBeGreaterThan(0);
      expect(runner.builtBytes).toBeLessThanOrEqual(builtRunnerBytes);
      for (const i of [27, 28, 29]) expect(await runner.forCaller(caller(tenants[i]!))).toBe(built[i]);
      const rebuilt = await runner.forCaller(caller(tenants[0]!));
      expect(rebuilt).not.toBe(built[0]);
      expect(rebuilt.toolSpecs(caller(tenants[0]!)).map((s) => s.function.name)).toEqual(["hostile__lookup"]);
      const message = await rebuilt.run(
        { id: "call-1", name: "hostile__lookup", args: { key: "k0" } },
        { conversationId: "c1", turnId: "t1", toolCallId: "call-1", caller: caller(tenants[0]!) },
      );
      expect(message.content).toBe("value of k0");
    });
  });
});
