import { describe, expect, it } from "vitest";
import { DEFAULT_MCP_TOOLS_TTL_SECONDS, loadMcpConfig, mcpServerEntrySchema } from "../../lib/config/mcp-servers-config.js";

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

describe("mcpServerEntrySchema", () => {
  const withAuth = (auth: unknown) => mcpServerEntrySchema.safeParse({ ...wiki, auth });
  const messages = (auth: unknown) => JSON.stringify(withAuth(auth).error?.issues.map((i) => i.message));

  it("returns a static credential in a credential header, whatever its case", () => {
    expect(withAuth({ kind: "static", secretName: "crmKey", header: "x-api-key" }).success).toBe(true);
    expect(withAuth({ kind: "static", secretName: "crm.key_2-b" }).success).toBe(true);
  });

  it("throws for a header outside the allow-list, naming the headers allowed", () => {
    for (const header of ["X-Leak", "Host", "Cookie", "Forwarded", "X-Forwarded-For"]) {
      expect(withAuth({ kind: "static", secretName: "crmKey", header }).success).toBe(false);
    }
    expect(messages({ kind: "static", secretName: "crmKey", header: "X-Leak" })).toContain("Authorization, X-API-Key");
  });

  it("throws for a secret name that is not one segment, saying where names are read", () => {
    for (const secretName of ["mcp/wikiToken", "../wikiToken", "api/globex/crmKey", "", "a b"]) {
      expect(withAuth({ kind: "static", secretName }).success).toBe(false);
    }
    expect(withAuth({ kind: "oauth", clientId: "tw", clientSecretName: "mcp/api/globex/x" }).success).toBe(false);
    expect(messages({ kind: "static", secretName: "mcp/x" })).toContain("mcp/<issuer>/<tenant>/<name>");
  });

  it("throws for a scheme that is not a word", () => {
    expect(withAuth({ kind: "static", secretName: "crmKey", scheme: "Bearer x\r\nX-Leak:" }).success).toBe(false);
  });
});

describe("loadMcpConfig's secrets and egress", () => {
  it("throws for an MCP_LOCAL_SECRETS key outside mcp/", () => {
    expect(() => loadMcpConfig({ MCP_LOCAL_SECRETS: JSON.stringify({ wikiToken: "x" }) })).toThrow(/invalid configuration/);
    expect(loadMcpConfig({ MCP_LOCAL_SECRETS: JSON.stringify({ "mcp/wikiToken": "x" }) }).localSecrets).toEqual({ "mcp/wikiToken": "x" });
  });

  it("returns the CIDRs of MCP_EGRESS_ALLOW, and throws for one that is not", () => {
    expect(loadMcpConfig({ MCP_EGRESS_ALLOW: "10.20.0.0/16, fd00::/8,192.0.2.7" }).egressAllow).toEqual(["10.20.0.0/16", "fd00::/8", "192.0.2.7"]);
    expect(loadMcpConfig({}).egressAllow).toEqual([]);
    expect(() => loadMcpConfig({ MCP_EGRESS_ALLOW: "10.0.0.0/33" })).toThrow(/invalid configuration/);
    expect(() => loadMcpConfig({ MCP_EGRESS_ALLOW: "intranet" })).toThrow(/invalid configuration/);
  });
});
