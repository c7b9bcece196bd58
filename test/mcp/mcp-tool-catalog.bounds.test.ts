import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiPrincipal, type Caller } from "../../lib/auth/principal.js";
import { loadMcpConfig, type McpServerEntry } from "../../lib/config/mcp-servers-config.js";
import { LOOPBACK_NETWORKS } from "../../lib/mcp/egress-fetch.js";
import { maxResponseBytesOf, McpConnections } from "../../lib/mcp/mcp-connections.js";
import { DEFAULT_MCP_MAX_TOOL_LIST_PAGES, McpToolCatalog, type McpCallEvent } from "../../lib/mcp/mcp-tool-catalog.js";
import { ToolRegistry } from "../../lib/tools/tool-registry.js";
import { startEndlessPagesServer, startHugeOutputServer } from "../support/mcp-servers.js";

const alice: Caller = { principal: apiPrincipal("alice", "acme"), roles: [] };
const opened: McpConnections[] = [];
afterAll(() => Promise.all(opened.map((c) => c.close())));

function catalog(options: { discoveryTimeoutMs?: number } = {}) {
  const events: McpCallEvent[] = [];
  const connections = new McpConnections({ secrets: { get: async () => undefined }, egress: { allow: LOOPBACK_NETWORKS } });
  opened.push(connections);
  return { catalog: new McpToolCatalog({ connections, config: loadMcpConfig({}), onEvent: (e) => events.push(e), ...options }), events };
}
const entry = (url: string, extra: Partial<McpServerEntry> = {}): McpServerEntry => ({
  name: "hostile",
  transport: { kind: "streamable-http", url },
  ...extra,
});

describe("McpToolCatalog", () => {
  describe("toolSet against a server whose tools/list never ends", () => {
    let endless: Awaited<ReturnType<typeof startEndlessPagesServer>>;
    let slow: Awaited<ReturnType<typeof startEndlessPagesServer>>;
    beforeAll(async () => {
      [endless, slow] = await Promise.all([startEndlessPagesServer(), startEndlessPagesServer({ pageDelayMs: 200, toolPerPage: true })]);
    });
    afterAll(() => Promise.all([endless?.stop(), slow?.stop()]));

    it("returns no tools after DEFAULT_MCP_MAX_TOOL_LIST_PAGES empty pages, and asks for none more", async () => {
      const { catalog: c, events } = catalog();
      const set = await c.toolSet(alice, "acme", [entry(endless.url)], new Set());
      expect(set.tools).toEqual([]);
      expect(endless.counters.lists).toBe(DEFAULT_MCP_MAX_TOOL_LIST_PAGES);
      expect(events).toContainEqual(expect.objectContaining({ kind: "discovery", outcome: "refused" }));
      await new Promise((r) => setTimeout(r, 300));
      expect(endless.counters.lists).toBe(DEFAULT_MCP_MAX_TOOL_LIST_PAGES);
    });

    it("returns no tools once the discovery's pages are past its time together, and asks for no page after", async () => {
      const { catalog: c, events } = catalog({ discoveryTimeoutMs: 700 });
      const started = Date.now();
      const set = await c.toolSet(alice, "acme", [entry(slow.url)], new Set());
      expect(Date.now() - started).toBeLessThan(2_000);
      expect(set.tools).toEqual([]);
      expect(events).toContainEqual(expect.objectContaining({ kind: "discovery", outcome: "timeout" }));
      const lists = slow.counters.lists;
      expect(lists).toBeLessThanOrEqual(5);
      await new Promise((r) => setTimeout(r, 600));
      expect(slow.counters.lists).toBeLessThanOrEqual(lists + 1);
    });
  });

  describe("a call whose answer is far over maxOutputBytes", () => {
    let huge: Awaited<ReturnType<typeof startHugeOutputServer>>;
    let hugeEvent: Awaited<ReturnType<typeof startHugeOutputServer>>;
    const BYTES = 64 * 1024 * 1024;
    beforeAll(async () => {
      [huge, hugeEvent] = await Promise.all([startHugeOutputServer(BYTES), startHugeOutputServer(BYTES, { sse: true })]);
    });
    afterAll(() => Promise.all([huge?.stop(), hugeEvent?.stop()]));

    it("returns a tool error naming the cap, having read little more than the cap of the answer", async () => {
      const { catalog: c, events } = catalog();
      const hostile = entry(huge.url, { maxOutputBytes: 10_000 });
      const set = await c.toolSet(alice, "acme", [hostile], new Set());
      const registry = new ToolRegistry(set.tools, {});
      const rssBefore = process.memoryUsage().rss;
      const result = await registry.execute({ id: "1", name: "hostile__dump", args: {} }, { conversationId: "c1", turnId: "t1", caller: alice });
      const rssGrowth = process.memoryUsage().rss - rssBefore;
      expect(result.status).toBe("error");
      expect(result.content).toContain(`answer was over ${maxResponseBytesOf(hostile)} bytes`);
      // The server stops once the client stops reading: what it wrote is the cap plus the sockets' buffers, not the 64 MB.
      await expect.poll(() => huge.counters.written < maxResponseBytesOf(hostile) + 8 * 1024 * 1024).toBe(true);
      expect(huge.counters.written).toBeLessThan(BYTES / 4);
      expect(rssGrowth).toBeLessThan(48 * 1024 * 1024);
      expect(events).toContainEqual(expect.objectContaining({ kind: "call", tool: "dump", outcome: "refused" }));
    });

    it("returns the same tool error at once for one event of an event stream over the cap, not at the call's timeout", async () => {
      const { catalog: c } = catalog();
      const hostile = entry(hugeEvent.url, { maxOutputBytes: 10_000, timeoutMs: 20_000 });
      const registry = new ToolRegistry((await c.toolSet(alice, "acme", [hostile], new Set())).tools, {});
      const started = Date.now();
      const result = await registry.execute({ id: "1", name: "hostile__dump", args: {} }, { conversationId: "c1", turnId: "t1", caller: alice });
      expect(result.status).toBe("error");
      expect(result.content).toContain(`answer was over ${maxResponseBytesOf(hostile)} bytes`);
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(hugeEvent.counters.written).toBeLessThan(BYTES / 4);
    });
  });
});
