import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiPrincipal, type Caller } from "../../lib/auth/principal.js";
import { loadMcpConfig, type McpServerEntry } from "../../lib/config/mcp-servers-config.js";
import { LOOPBACK_NETWORKS } from "../../lib/mcp/egress-fetch.js";
import { McpConnections } from "../../lib/mcp/mcp-connections.js";
import { McpToolCatalog, type McpCallEvent } from "../../lib/mcp/mcp-tool-catalog.js";
import type { ToolDefinition } from "../../lib/tools/tool.js";
import { ToolRegistry } from "../../lib/tools/tool-registry.js";
import { EVERYTHING_SERVER, startEverythingHttp, startHostileServer } from "../support/mcp-servers.js";

const alice: Caller = { principal: apiPrincipal("alice", "acme"), roles: ["analyst"] };
const bob: Caller = { principal: apiPrincipal("bob", "acme"), roles: [] };
const config = loadMcpConfig({ MCP_TOOLS_TTL_SECONDS: "60" });

let hostile: Awaited<ReturnType<typeof startHostileServer>>;
let flood: Awaited<ReturnType<typeof startHostileServer>>;
let everythingHttp: Awaited<ReturnType<typeof startEverythingHttp>>;
const connections: McpConnections[] = [];

beforeAll(async () => {
  [hostile, flood, everythingHttp] = await Promise.all([startHostileServer(), startHostileServer({ extraTools: 80 }), startEverythingHttp()]);
});
afterAll(async () => {
  await Promise.all(connections.map((c) => c.close()));
  await Promise.all([hostile?.stop(), flood?.stop(), everythingHttp?.stop()]);
});

function catalogWith(options: { now?: () => number; secrets?: Record<string, string>; discoveryCacheBytes?: number } = {}) {
  const events: McpCallEvent[] = [];
  const conns = new McpConnections({ secrets: { get: async (name) => options.secrets?.[name] }, allowStdio: true, egress: { allow: LOOPBACK_NETWORKS } });
  connections.push(conns);
  const catalog = new McpToolCatalog({
    connections: conns,
    config,
    onEvent: (e) => events.push(e),
    now: options.now,
    discoveryCacheBytes: options.discoveryCacheBytes,
  });
  return { catalog, events };
}

const http = (name: string, url: string, extra: Partial<McpServerEntry> = {}): McpServerEntry => ({
  name,
  transport: { kind: "streamable-http", url },
  ...extra,
});
/** A registry of the read-only tools (those that change things need the guard, which the app tests bring). */
const readOnlyRegistry = (tools: ToolDefinition[]) =>
  new ToolRegistry(
    tools.filter((t) => !t.sideEffects),
    {},
  );
const ctx = (caller: Caller) => ({ conversationId: "c1", turnId: "t1", caller });

describe("McpToolCatalog", () => {
  describe("toolSet", () => {
    it("returns server-everything's tools over stdio, namespaced, and runs echo", async () => {
      const { catalog } = catalogWith();
      const entry: McpServerEntry = { name: "everything", transport: { kind: "stdio", command: process.execPath, args: [EVERYTHING_SERVER, "stdio"] } };
      const set = await catalog.toolSet(alice, "acme", [entry], new Set());
      const names = set.tools.map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining(["everything__echo", "everything__get-sum"]));
      for (const name of names) expect(name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
      const registry = readOnlyRegistry(set.tools);
      expect(registry.toolSpecs(alice).find((s) => s.function.name === "everything__echo")?.function.parameters).toMatchObject({ type: "object" });
      const result = await registry.execute({ id: "1", name: "everything__echo", args: { message: "hi there" } }, ctx(alice));
      expect(result).toEqual({ status: "success", content: "Echo: hi there" });
    }, 20_000);

    it("returns server-everything's tools over Streamable HTTP and runs get-sum", async () => {
      const { catalog } = catalogWith();
      const set = await catalog.toolSet(alice, "acme", [http("every", everythingHttp.url, { tools: ["get-sum", "echo"] })], new Set());
      expect(set.tools.map((t) => t.name).sort()).toEqual(["every__echo", "every__get-sum"]);
      const registry = readOnlyRegistry(set.tools);
      const result = await registry.execute({ id: "1", name: "every__get-sum", args: { a: 2, b: 3 } }, ctx(alice));
      expect(result.status).toBe("success");
      expect(result.content).toContain("5");
    });

    it("lists a server once per TTL, and again after it", async () => {
      let now = 1_000_000;
      const { catalog, events } = catalogWith({ now: () => now });
      const entries = [http("hostile", hostile.url)];
      const first = await catalog.toolSet(alice, "acme", entries, new Set());
      await catalog.toolSet(bob, "acme", entries, new Set());
      expect(events.filter((e) => e.kind === "discovery")).toHaveLength(1);
      now += 61_000;
      const third = await catalog.toolSet(alice, "acme", entries, new Set());
      expect(events.filter((e) => e.kind === "discovery")).toHaveLength(2);
      expect(third.key).not.toBe(first.key);
    });

    it("keeps its discoveries within discoveryCacheBytes over many tenants: the most recent still hit, an evicted one is listed again, correctly", async () => {
      const discoveryCacheBytes = 64 * 1024;
      const { catalog } = catalogWith({ now: () => 1_000_000, discoveryCacheBytes });
      const entries = [http("hostile", hostile.url)];
      const tenants = Array.from({ length: 30 }, (_, i) => `tenant-${i}`);
      const first = await catalog.toolSet(alice, tenants[0]!, entries, new Set());
      const lists = hostile.counters.lists;
      for (const tenant of tenants.slice(1)) await catalog.toolSet(alice, tenant, entries, new Set());
      expect(hostile.counters.lists).toBe(lists + 29);
      expect(catalog.cachedBytes).toBeGreaterThan(0);
      expect(catalog.cachedBytes).toBeLessThanOrEqual(discoveryCacheBytes);
      for (const tenant of tenants.slice(-3)) await catalog.toolSet(alice, tenant, entries, new Set());
      expect(hostile.counters.lists).toBe(lists + 29);
      const again = await catalog.toolSet(alice, tenants[0]!, entries, new Set());
      expect(hostile.counters.lists).toBe(lists + 30);
      expect(again.tools.map((t) => [t.name, t.parameters])).toEqual(first.tools.map((t) => [t.name, t.parameters]));
      const result = await readOnlyRegistry(again.tools).execute({ id: "1", name: "hostile__lookup", args: { key: "k0" } }, ctx(alice));
      expect(result).toEqual({ status: "success", content: "value of k0" });
    });

    it("returns no tool of a server that lists more than MCP_MAX_TOOLS_PER_SERVER", async () => {
      const { catalog, events } = catalogWith();
      const set = await catalog.toolSet(alice, "acme", [http("flood", flood.url)], new Set());
      expect(set.tools).toEqual([]);
      expect(events).toContainEqual(expect.objectContaining({ kind: "discovery", outcome: "refused" }));
    });

    it("leaves out a tool whose schema is over the size limit, and cuts and marks an instructing description", async () => {
      const { catalog } = catalogWith();
      const set = await catalog.toolSet(alice, "acme", [http("hostile", hostile.url)], new Set());
      const names = set.tools.map((t) => t.name);
      expect(names).not.toContain("hostile__big_schema");
      const lookup = set.tools.find((t) => t.name === "hostile__lookup")!;
      expect(lookup.description.startsWith("[hostile MCP server] Looks up a value. IMPORTANT")).toBe(true);
      expect(lookup.description.length).toBeLessThanOrEqual("[hostile MCP server] ".length + 1_000);
      expect(lookup.description).not.toContain("\n");
      expect(lookup.trust).toBe("untrusted");
    });

    it("refuses a tool whose namespaced name is already taken", async () => {
      const { catalog } = catalogWith();
      const set = await catalog.toolSet(alice, "acme", [http("hostile", hostile.url)], new Set(["hostile__lookup"]));
      expect(set.tools.map((t) => t.name)).not.toContain("hostile__lookup");
    });

    it("returns approval policies from annotations: unmarked waits unless configured, destructive always waits", async () => {
      const { catalog } = catalogWith();
      const entry = http("hostile", hostile.url, {
        approvals: { write_record: { require: "never" }, drop_table: { require: "never", approvers: { roles: ["dba"] } } },
      });
      const plain = await catalog.toolSet(alice, "acme", [http("h2", hostile.url)], new Set());
      expect(plain.approvals).toEqual({ h2__write_record: { require: "always" }, h2__drop_table: { require: "always" } });
      const configured = await catalog.toolSet(alice, "acme", [entry], new Set());
      expect(configured.approvals.hostile__write_record).toEqual({ require: "never" });
      expect(configured.approvals.hostile__drop_table).toEqual({ require: "always", approvers: { roles: ["dba"] } });
      expect(configured.tools.find((t) => t.name === "hostile__lookup")?.sideEffects).toBe(false);
      expect(configured.tools.find((t) => t.name === "hostile__write_record")?.sideEffects).toBe(true);
    });

    it("offers a tool only to the roles its entry names", async () => {
      const { catalog } = catalogWith();
      const set = await catalog.toolSet(alice, "acme", [http("hostile", hostile.url, { allowedRoles: ["analyst"], roles: { lookup: ["nobody"] } })], new Set());
      const registry = readOnlyRegistry(set.tools);
      expect(registry.mayUse("hostile__slow", alice)).toBe(true);
      expect(registry.mayUse("hostile__slow", bob)).toBe(false);
      expect(registry.mayUse("hostile__lookup", alice)).toBe(false);
    });

    it("returns no tools and a failed discovery for a server that is down", async () => {
      const { catalog, events } = catalogWith();
      const set = await catalog.toolSet(alice, "acme", [http("down", "http://127.0.0.1:9/mcp", { timeoutMs: 1_000 })], new Set());
      expect(set.tools).toEqual([]);
      expect(events).toContainEqual(expect.objectContaining({ kind: "discovery", outcome: "unreachable" }));
    });

    it("sends a static credential from the secrets, and lists nothing without it", async () => {
      const guarded = await startHostileServer({ requireToken: "s3cret" });
      try {
        const entry = http("guarded", guarded.url, { auth: { kind: "static", secretName: "mcpGuardedToken" } });
        const without = await catalogWith().catalog.toolSet(alice, "acme", [entry], new Set());
        expect(without.tools).toEqual([]);
        const withSecret = await catalogWith({ secrets: { "mcp/api/acme/mcpGuardedToken": "s3cret" } }).catalog.toolSet(alice, "acme", [entry], new Set());
        expect(withSecret.tools.map((t) => t.name)).toContain("guarded__lookup");
        expect(guarded.seenAuthorization).toContain("Bearer s3cret");
      } finally {
        await guarded.stop();
      }
    });
  });

  describe("a call", () => {
    async function hostileRegistry(extra: Partial<McpServerEntry> = {}) {
      const { catalog, events } = catalogWith();
      const set = await catalog.toolSet(alice, "acme", [http("hostile", hostile.url, extra)], new Set());
      return { registry: readOnlyRegistry(set.tools), events };
    }

    it("returns a tool error, not a failed turn, for a tool that hangs past its timeout", async () => {
      const { registry, events } = await hostileRegistry({ timeoutMs: 300 });
      const started = Date.now();
      const result = await registry.execute({ id: "1", name: "hostile__hang", args: {} }, ctx(alice));
      expect(result.status).toBe("error");
      expect(result.content).toMatch(/timed out after 300 ms|did not answer within 300 ms/);
      expect(Date.now() - started).toBeLessThan(2_000);
      await expect.poll(() => events.some((e) => e.kind === "call" && e.tool === "hang" && e.outcome === "timeout")).toBe(true);
    });

    it("returns an output over maxOutputBytes cut and marked", async () => {
      const { registry, events } = await hostileRegistry({ maxOutputBytes: 1_000 });
      const result = await registry.execute({ id: "1", name: "hostile__flood", args: {} }, ctx(alice));
      expect(result.status).toBe("success");
      expect(result.content).toHaveLength(1_000 + "\n[output cut: the first 1000 of 1000000 bytes]".length);
      expect(result.content.endsWith("[output cut: the first 1000 of 1000000 bytes]")).toBe(true);
      expect(events).toContainEqual(expect.objectContaining({ tool: "flood", outputBytes: 1_000_000, truncated: true }));
    });

    it("returns the server's isError answer as a tool error", async () => {
      const { registry } = await hostileRegistry();
      const result = await registry.execute({ id: "1", name: "hostile__fails", args: {} }, ctx(alice));
      expect(result).toEqual({ status: "error", content: "Error: hostile__fails: the hostile server answered with an error: backend exploded" });
    });

    it("holds calls past maxConcurrency until a slot is free", async () => {
      const { registry } = await hostileRegistry({ maxConcurrency: 2 });
      hostile.counters.peakInFlight = 0;
      const results = await Promise.all(Array.from({ length: 5 }, (_, i) => registry.execute({ id: `${i}`, name: "hostile__slow", args: {} }, ctx(alice))));
      expect(results.every((r) => r.status === "success")).toBe(true);
      expect(hostile.counters.peakInFlight).toBe(2);
    });
  });
});
