import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiPrincipal } from "../../lib/auth/principal.js";
import type { McpServerEntry } from "../../lib/config/mcp-servers-config.js";
import { LOOPBACK_NETWORKS } from "../../lib/mcp/egress-fetch.js";
import { connectionKey, McpConnectError, McpConnections } from "../../lib/mcp/mcp-connections.js";
import { startHostileServer } from "../support/mcp-servers.js";

const open: McpServerEntry = { name: "wiki", transport: { kind: "streamable-http", url: "https://wiki.example/mcp" } };
const perUser: McpServerEntry = { ...open, auth: { kind: "oauth" } };
const alice = apiPrincipal("alice", "acme");
const bob = apiPrincipal("bob", "acme");

describe("connectionKey", () => {
  it("returns one key for every user of a server without per-user auth, and one per user with it", () => {
    expect(connectionKey({ tenant: "acme", entry: open, principal: alice })).toBe(connectionKey({ tenant: "acme", entry: open, principal: bob }));
    expect(connectionKey({ tenant: "acme", entry: perUser, principal: alice })).not.toBe(connectionKey({ tenant: "acme", entry: perUser, principal: bob }));
  });

  it("returns another key once the entry changes, so the change reconnects", () => {
    const changed = { ...open, timeoutMs: 5_000 };
    expect(connectionKey({ tenant: "acme", entry: open, principal: alice })).not.toBe(connectionKey({ tenant: "acme", entry: changed, principal: alice }));
  });
});

describe("McpConnections", () => {
  describe("get", () => {
    const connections = new McpConnections({ secrets: { get: async () => undefined } });

    it("throws stdio_not_allowed for a stdio server outside local mode, and runs nothing", async () => {
      const stdio: McpServerEntry = { name: "local", transport: { kind: "stdio", command: "definitely-not-run" } };
      await expect(connections.get({ tenant: "acme", entry: stdio, principal: alice })).rejects.toMatchObject({ reason: "stdio_not_allowed" });
    });

    it("throws missing_secret for a static credential that is not set", async () => {
      const entry: McpServerEntry = { ...open, auth: { kind: "static", secretName: "wikiToken" } };
      const error = await connections.get({ tenant: "acme", entry, principal: alice }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(McpConnectError);
      expect((error as McpConnectError).reason).toBe("missing_secret");
    });

    it("throws for an oauth server when the deployment has no provider factory", async () => {
      await expect(connections.get({ tenant: "acme", entry: perUser, principal: alice })).rejects.toMatchObject({ reason: "unreachable" });
    });

    describe("past maxConnections", () => {
      let hostile: Awaited<ReturnType<typeof startHostileServer>>;
      beforeAll(async () => {
        hostile = await startHostileServer();
      });
      afterAll(() => hostile?.stop());

      it("closes the least recently used connection, and a later use of its scope opens one that works", async () => {
        const bounded = new McpConnections({ secrets: { get: async () => undefined }, maxConnections: 2, egress: { allow: LOOPBACK_NETWORKS } });
        const entry: McpServerEntry = { name: "hostile", transport: { kind: "streamable-http", url: hostile.url } };
        const scope = (tenant: string) => ({ tenant, entry, principal: alice });
        try {
          const first = await bounded.get(scope("t1"));
          const second = await bounded.get(scope("t2"));
          await bounded.get(scope("t3"));
          await new Promise((r) => setTimeout(r, 50));
          expect(first.client.transport).toBeUndefined();
          expect(second.client.transport).toBeDefined();
          const reopened = await bounded.get(scope("t1"));
          expect(reopened).not.toBe(first);
          expect((await reopened.client.listTools()).tools.map((t) => t.name)).toContain("lookup");
        } finally {
          await bounded.close();
        }
      });
    });
  });
});
