import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiPrincipal, slackPrincipal } from "../../lib/auth/principal.js";
import type { McpServerEntry } from "../../lib/config/mcp-servers-config.js";
import { LOOPBACK_NETWORKS } from "../../lib/mcp/egress-fetch.js";
import { McpConnections, type McpConnectionScope } from "../../lib/mcp/mcp-connections.js";
import { mcpSecretKey, mcpSecretSource } from "../../lib/mcp/mcp-secrets.js";
import { startHostileServer } from "../support/mcp-servers.js";

/** What a function can read in AWS: the deployment's own keys beside the MCP ones (`secretsOf` in functions/shared/app-runtime.ts). */
const DEPLOYMENT_SECRETS: Record<string, string> = {
  mongodbUri: "mongodb+srv://core-database-secret",
  slackBotToken: "xoxb-core-slack-token",
  wikiToken: "core-wiki-token",
  "mcp/wikiToken": "deployment-mcp-wiki-token",
  "mcp/api/acme/crmKey": "acme-crm-key",
  "mcp/api/globex/crmKey": "globex-crm-key",
  "mcp/slack/T0123/crmKey": "slack-workspace-crm-key",
};
const source = { get: async (name: string) => DEPLOYMENT_SECRETS[name] };

describe("mcpSecretKey", () => {
  it("returns mcp/<name> for the deployment's entries and mcp/<issuer>/<tenant>/<name> for a tenant's", () => {
    expect(mcpSecretKey({ kind: "deployment" }, "wikiToken")).toBe("mcp/wikiToken");
    expect(mcpSecretKey({ kind: "tenant", issuer: "api", tenant: "acme" }, "crmKey")).toBe("mcp/api/acme/crmKey");
    expect(mcpSecretKey({ kind: "tenant", issuer: "api", tenant: null }, "crmKey")).toBe("mcp/api//crmKey");
  });

  it("returns keys that no other tenant's name reaches, even for a tenant with a slash in its name", () => {
    expect(mcpSecretKey({ kind: "tenant", issuer: "api", tenant: "acme/x" }, "y")).toBe("mcp/api/acme%2Fx/y");
    expect(mcpSecretKey({ kind: "tenant", issuer: "api", tenant: "acme/x" }, "y")).not.toBe(
      mcpSecretKey({ kind: "tenant", issuer: "api", tenant: "acme" }, "x/y"),
    );
  });
});

describe("mcpSecretSource", () => {
  it("returns undefined for every key outside mcp/, whatever the source holds", async () => {
    const scoped = mcpSecretSource(source);
    expect(await scoped.get("mongodbUri")).toBeUndefined();
    expect(await scoped.get("wikiToken")).toBeUndefined();
    expect(await scoped.get("mcp/wikiToken")).toBe("deployment-mcp-wiki-token");
  });
});

describe("McpConnections with static credentials", () => {
  let server: Awaited<ReturnType<typeof startHostileServer>>;
  const connections = new McpConnections({ secrets: source, egress: { allow: LOOPBACK_NETWORKS } });
  beforeAll(async () => {
    server = await startHostileServer();
  });
  afterAll(async () => {
    await connections.close();
    await server?.stop();
  });

  const entry = (secretName: string, header?: string): McpServerEntry => ({
    name: "crm",
    transport: { kind: "streamable-http", url: server.url },
    auth: { kind: "static", secretName, ...(header && { header }) },
  });
  const acme = (e: McpServerEntry): McpConnectionScope => ({ tenant: "acme", entry: e, principal: apiPrincipal("alice", "acme") });
  const sentValues = () => server.seenHeaders.flatMap((h) => Object.values(h).flat()).join("\n");

  it("throws missing_secret for a tenant's entry naming a deployment key, and the server never sees the key's value", async () => {
    for (const name of ["wikiToken", "mongodbUri", "slackBotToken"]) {
      await expect(connections.get(acme(entry(name)))).rejects.toMatchObject({ reason: "missing_secret" });
    }
    expect(sentValues()).not.toMatch(/core-|deployment-mcp/);
  });

  it("sends the tenant's own secret, never another tenant's or another issuer's of the same name", async () => {
    server.seenHeaders.length = 0;
    const connection = await connections.get(acme(entry("crmKey")));
    await connection.client.listTools();
    expect(server.seenAuthorization).toContain("Bearer acme-crm-key");
    expect(sentValues()).not.toMatch(/globex-crm-key|slack-workspace-crm-key/);
    const workspace: McpConnectionScope = { tenant: "T0123", entry: entry("crmKey"), principal: slackPrincipal("T0123", "U1") };
    await (await connections.get(workspace)).client.listTools();
    expect(server.seenAuthorization).toContain("Bearer slack-workspace-crm-key");
  });

  it("sends the deployment's MCP secret for a deployment entry, and never a core credential", async () => {
    server.seenHeaders.length = 0;
    const wiki = entry("wikiToken");
    await (await connections.get({ ...acme(wiki), deployment: true })).client.listTools();
    expect(server.seenAuthorization).toContain("Bearer deployment-mcp-wiki-token");
    await expect(connections.get({ ...acme(entry("mongodbUri")), deployment: true })).rejects.toMatchObject({ reason: "missing_secret" });
    expect(sentValues()).not.toMatch(/core-/);
  });

  it("hands the OAuth provider factory the tenant's key for an entry's clientSecretName, and refuses one that is not a name", async () => {
    const asked: (string | undefined)[] = [];
    const withOAuth = new McpConnections({
      secrets: source,
      egress: { allow: LOOPBACK_NETWORKS },
      oauth: (_principal, scope) => {
        asked.push(scope.server.auth.clientSecretName);
        throw new Error("stop here");
      },
    });
    const crm: McpServerEntry = {
      name: "crm",
      transport: { kind: "streamable-http", url: server.url },
      auth: { kind: "oauth", clientId: "tw", clientSecretName: "crmKey" },
    };
    await expect(withOAuth.get(acme(crm))).rejects.toThrow("stop here");
    expect(asked).toEqual(["mcp/api/acme/crmKey"]);
    const outside = { ...crm, auth: { kind: "oauth" as const, clientId: "tw", clientSecretName: "../../wikiToken" } };
    await expect(withOAuth.get(acme(outside))).rejects.toMatchObject({ reason: "secret_refused" });
  });

  it("throws secret_refused for a stored entry whose header is not a credential header or whose name leaves its prefix, and sends nothing", async () => {
    server.seenHeaders.length = 0;
    await expect(connections.get(acme(entry("crmKey", "X-Leak")))).rejects.toMatchObject({ reason: "secret_refused" });
    await expect(connections.get(acme(entry("../wikiToken")))).rejects.toMatchObject({ reason: "secret_refused" });
    await expect(connections.get(acme(entry("crmKey", "Host")))).rejects.toMatchObject({ reason: "secret_refused" });
    expect(server.seenHeaders).toEqual([]);
  });
});
