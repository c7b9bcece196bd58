import { mongoUri } from "../support/mongo.js";
import { startTcpProxy, type TcpProxy } from "../support/tcp-proxy.js";
import { emfOf } from "./support/emf.js";

let proxy: TcpProxy;
let runtime: typeof import("../../functions/shared/runtime.js");

beforeAll(async () => {
  proxy = await startTcpProxy(Number(new URL(mongoUri().replace("mongodb://", "http://")).port));
  process.env.MONGODB_SERVER_SELECTION_TIMEOUT_MS = "300";
  // Metrics as the stack configures them, so publishLimitUsage's records are written.
  process.env.POWERTOOLS_METRICS_NAMESPACE = "Threadwise";
  process.env.POWERTOOLS_SERVICE_NAME = "threadwise-test";
  process.env.POWERTOOLS_METRICS_DISABLED = "false";
  process.env.POWERTOOLS_DEV = "true";
  // Read at import, as in a cold start.
  runtime = await import("../../functions/shared/runtime.js");
});
afterAll(async () => {
  await proxy.close();
});

describe("functions/shared/runtime", () => {
  describe("mongoClientFor", () => {
    const credentials = () => ({ mongodbUri: `mongodb://127.0.0.1:${proxy.port}/?directConnection=true` });

    it("returns the same client for the same URI", () => {
      expect(runtime.mongoClientFor(credentials())).toBe(runtime.mongoClientFor(credentials()));
    });

    it("returns a new client after the first connection of the previous one failed, which then connects", async () => {
      await proxy.cut();
      const failed = runtime.mongoClientFor({ mongodbUri: `${credentials().mongodbUri}&appName=first` });
      await expect(failed.db("admin").command({ ping: 1 })).rejects.toThrow();
      await proxy.restore();
      const next = runtime.mongoClientFor({ mongodbUri: `${credentials().mongodbUri}&appName=first` });
      expect(next).not.toBe(failed);
      expect(await next.db("admin").command({ ping: 1 })).toMatchObject({ ok: 1 });
      await next.close();
    });

    it("throws CredentialsMissingError naming mongodbUri when the database secret leaves it empty", () => {
      expect(() => runtime.mongoClientFor({})).toThrow(
        expect.objectContaining({ name: "CredentialsMissingError", missing: [{ key: "mongodbUri", secret: "database" }] }),
      );
    });
  });

  describe("publishLimitUsage", () => {
    it("writes a tenant's usage as EMF records with the tenant as a property, not a dimension, and nothing for a user", async () => {
      const tenant = { kind: "tenant" as const, issuer: "api" as const, tenant: "acme", subject: null };
      const records = await emfOf(async () => {
        runtime.publishLimitUsage({ scope: tenant, tokens: 1200, costUsd: 0.01, budgetPercent: 81 });
        runtime.publishLimitUsage({ scope: { ...tenant, kind: "user", subject: "ada" }, tokens: 1200, costUsd: 0.01 });
      });
      expect(records.map((r) => [r.tenant, Object.keys(r).find((k) => k.startsWith("Tenant"))])).toEqual([
        ["api:acme", "TenantTokens"],
        ["api:acme", "TenantCostUsd"],
        ["api:acme", "TenantBudgetPercent"],
      ]);
      for (const r of records) expect(r._aws.CloudWatchMetrics[0].Dimensions.flat()).not.toContain("tenant");
      expect(records[2].TenantBudgetPercent).toBe(81);
    });
  });

  describe("publishMcpEvent", () => {
    it("writes a call's duration, and a failure record only for an outcome that is not success, with the server as a property", async () => {
      const records = await emfOf(async () => {
        runtime.publishMcpEvent({ kind: "call", server: "wiki", tool: "search", outcome: "success", durationMs: 40 });
        runtime.publishMcpEvent({ kind: "call", server: "wiki", tool: "search", outcome: "timeout", durationMs: 15_000 });
        runtime.publishMcpEvent({ kind: "discovery", server: "crm", outcome: "unreachable", durationMs: 3 });
      });
      expect(records.map((r) => [r.mcpServer, r.mcpOutcome, Object.keys(r).find((k) => k.startsWith("Mcp"))])).toEqual([
        ["wiki", "call:success", "McpCallDuration"],
        ["wiki", "call:timeout", "McpCallDuration"],
        ["wiki", "call:timeout", "McpFailures"],
        ["crm", "discovery:unreachable", "McpFailures"],
      ]);
      for (const r of records) expect(r._aws.CloudWatchMetrics[0].Dimensions.flat()).not.toContain("mcpServer");
    });
  });
});
