import { describe, expect, it } from "vitest";
import { DEFAULT_MCP_TOOLS_TTL_SECONDS, loadMcpConfig } from "../../lib/config/mcp-servers-config.js";

const wiki = { name: "wiki", transport: { kind: "streamable-http", url: "https://wiki.example/mcp" } };

describe("loadMcpConfig", () => {
  it("returns no servers and the defaults when nothing is set", () => {
    expect(loadMcpConfig({})).toMatchObject({ servers: [], toolsTtlSeconds: DEFAULT_MCP_TOOLS_TTL_SECONDS, localSecrets: {} });
  });

  it("returns the servers of MCP_SERVERS", () => {
    expect(loadMcpConfig({ MCP_SERVERS: JSON.stringify([wiki]) }).servers).toEqual([wiki]);
  });

  it("throws for a server name used twice", () => {
    expect(() => loadMcpConfig({ MCP_SERVERS: JSON.stringify([wiki, wiki]) })).toThrow(/invalid configuration/);
  });

  it("throws for a name that could not prefix a Bedrock tool name, and for a non-HTTP URL", () => {
    expect(() => loadMcpConfig({ MCP_SERVERS: JSON.stringify([{ ...wiki, name: "my__wiki" }]) })).toThrow(/invalid configuration/);
    expect(() => loadMcpConfig({ MCP_SERVERS: JSON.stringify([{ ...wiki, transport: { kind: "streamable-http", url: "file:///etc/passwd" } }]) })).toThrow(
      /invalid configuration/,
    );
  });
});
