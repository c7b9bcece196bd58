import { describe, expect, it } from "vitest";
import type { McpServerEntry } from "../../lib/config/mcp-servers-config.js";
import { effectiveMcpServers } from "../../lib/mcp/effective-mcp-servers.js";

const entry = (name: string, url = `https://${name}.example/mcp`): McpServerEntry => ({ name, transport: { kind: "streamable-http", url } });

describe("effectiveMcpServers", () => {
  it("returns the tenant's entry over a default of the same name, every entry sorted by name", () => {
    const servers = effectiveMcpServers([entry("wiki"), entry("crm")], [entry("wiki", "https://own.example/mcp"), entry("billing")]);
    expect(servers.map((s) => s.name)).toEqual(["billing", "crm", "wiki"]);
    expect(servers[2]?.transport).toEqual({ kind: "streamable-http", url: "https://own.example/mcp" });
  });
});
