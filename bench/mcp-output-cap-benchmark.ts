/**
 * MCP output cap: the MCP client's memory while a hostile server answers one tool call with 8, 32
 * and 96 MB of text (streamed, never held whole by the server), through the product's path
 * (`McpConnections` and `McpToolCatalog`, the response cut while read) and through the SDK's own
 * fetch (the path before: the whole answer read and parsed, then cut to `maxOutputBytes`). Each
 * run is a child process of its own; the figure is its peak RSS (sampled every 10 ms) over its RSS
 * before the call. Part benchmark: the client alone, no turn around it.
 *
 *   npx tsx bench/mcp-output-cap-benchmark.ts
 */
import { spawnSync } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { apiPrincipal } from "../lib/auth/principal.js";
import { loadMcpConfig, type McpServerEntry } from "../lib/config/mcp-servers-config.js";
import { LOOPBACK_NETWORKS } from "../lib/mcp/egress-fetch.js";
import { McpConnections } from "../lib/mcp/mcp-connections.js";
import { McpToolCatalog } from "../lib/mcp/mcp-tool-catalog.js";
import { ToolRegistry } from "../lib/tools/tool-registry.js";

const SIZES_MB = [8, 32, 96];
const MAX_OUTPUT_BYTES = 200_000;

async function startServer(bytes: number): Promise<{ url: string; close(): void }> {
  const chunk = "A".repeat(64 * 1024);
  const http = createServer(async (req, res) => {
    const parts: Buffer[] = [];
    for await (const c of req) parts.push(c as Buffer);
    const body = parts.length ? JSON.parse(Buffer.concat(parts).toString("utf8")) : undefined;
    if (body?.method === "tools/call") {
      res.writeHead(200, { "content-type": "application/json" });
      res.write(`{"jsonrpc":"2.0","id":${JSON.stringify(body.id)},"result":{"content":[{"type":"text","text":"`);
      let sent = 0;
      let closed = false;
      res.on("close", () => {
        closed = true;
      });
      while (sent < bytes && !closed) {
        const piece = chunk.slice(0, Math.min(chunk.length, bytes - sent));
        sent += piece.length;
        if (!res.write(piece)) await new Promise((r) => res.once("drain", r).once("close", r));
      }
      if (!closed) res.end(`"}]}}`);
      return;
    }
    const server = new McpServer({ name: "huge", version: "1.0.0" });
    server.registerTool("dump", { description: "Answers a lot.", annotations: { readOnlyHint: true } }, async () => ({ content: [] }));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on("close", () => void transport.close());
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  });
  await new Promise<void>((r) => http.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`, close: () => http.close() };
}

/** One run in this process: prints `{ growthMb, outcome }`. */
async function child(mode: "capped" | "sdk", mb: number): Promise<void> {
  const server = await startServer(mb * 1024 * 1024);
  const entry: McpServerEntry = { name: "huge", transport: { kind: "streamable-http", url: server.url }, maxOutputBytes: MAX_OUTPUT_BYTES };
  let run: () => Promise<string>;
  if (mode === "capped") {
    const connections = new McpConnections({ secrets: { get: async () => undefined }, egress: { allow: LOOPBACK_NETWORKS } });
    const catalog = new McpToolCatalog({ connections, config: loadMcpConfig({}) });
    const caller = { principal: apiPrincipal("alice", "acme"), roles: [] };
    const registry = new ToolRegistry((await catalog.toolSet(caller, "acme", [entry], new Set())).tools, {});
    run = async () => (await registry.execute({ id: "1", name: "huge__dump", args: {} }, { conversationId: "c", turnId: "t", caller })).status;
  } else {
    const client = new Client({ name: "bench", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
    run = async () => {
      const result = (await client.callTool({ name: "dump", arguments: {} })) as { content: { text: string }[] };
      return `read ${result.content[0]!.text.length} bytes`;
    };
  }
  global.gc?.();
  const before = process.memoryUsage().rss;
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 10);
  const outcome = await run();
  peak = Math.max(peak, process.memoryUsage().rss);
  clearInterval(sampler);
  console.log(JSON.stringify({ growthMb: Math.round((peak - before) / 1024 / 1024), outcome }));
  server.close();
  process.exit(0);
}

if (process.argv[2] === "--child") {
  await child(process.argv[3] as "capped" | "sdk", Number(process.argv[4]));
} else {
  const self = fileURLToPath(import.meta.url);
  console.log(`| answer | SDK's fetch (before): peak RSS growth | egress fetch, capped (after): peak RSS growth | after: outcome |`);
  console.log(`| --- | --- | --- | --- |`);
  for (const mb of SIZES_MB) {
    const once = (mode: string) => {
      const out = spawnSync(process.execPath, ["--import", "tsx", "--expose-gc", self, "--child", mode, String(mb)], { encoding: "utf8" });
      const line = out.stdout.trim().split("\n").at(-1) ?? "";
      return JSON.parse(line) as { growthMb: number; outcome: string };
    };
    const sdk = once("sdk");
    const capped = once("capped");
    console.log(`| ${mb} MB | +${sdk.growthMb} MB | +${capped.growthMb} MB | ${capped.outcome} |`);
  }
}
