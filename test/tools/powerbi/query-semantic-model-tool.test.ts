import Database from "better-sqlite3";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ToolError } from "../../../lib/errors.js";
import { EntraTokenProvider } from "../../../lib/tools/powerbi/entra-token-provider.js";
import { PowerBiClient } from "../../../lib/tools/powerbi/power-bi-client.js";
import { createQuerySemanticModelTool } from "../../../lib/tools/powerbi/query-semantic-model-tool.js";
import type { SecretSource } from "../../../lib/tools/secrets.js";
import { buildSalesDatabase } from "../../../lib/tools/sql/sales-dataset.js";
import { ToolRegistry } from "../../../lib/tools/tool-registry.js";
import { startPowerBiEndpoint, type PowerBiEndpoint } from "../../support/powerbi-endpoint.js";

const MARGIN_BY_MONTH = `EVALUATE
  SUMMARIZECOLUMNS ( 'Date'[Month], "Gross Margin %", [Gross Margin %] )
  ORDER BY 'Date'[Month]`;

/** The semantic model's answer, computed from the same sample data the SQL tool serves. */
function marginRows(): Record<string, unknown>[] {
  const db = new Database(buildSalesDatabase(), { readonly: true });
  const rows = db
    .prepare("SELECT month, 100.0 * sum(gross_profit) / sum(revenue) AS gm FROM sales GROUP BY month ORDER BY month")
    .all() as { month: string; gm: number }[];
  db.close();
  return rows.map((r) => ({ "Date[Month]": r.month, "[Gross Margin %]": r.gm }));
}

const secrets = (values: Record<string, string>): SecretSource => ({ get: async (name) => values[name] });
const creds = { powerBiClientId: "app-123", powerBiClientSecret: "s3cr3t-value" };

describe("query_semantic_model", () => {
  let endpoint: PowerBiEndpoint;

  beforeAll(async () => {
    endpoint = await startPowerBiEndpoint({
      tenantId: "tenant-1",
      clientId: creds.powerBiClientId,
      clientSecret: creds.powerBiClientSecret,
      groupId: "group-1",
      datasetId: "dataset-1",
      queries: { [MARGIN_BY_MONTH]: marginRows() },
    });
  });
  afterAll(async () => endpoint.close());
  beforeEach(() => {
    endpoint.queryRequests.length = 0;
    endpoint.throttle(0, undefined);
  });

  function setup(overrides: { secretValues?: Record<string, string>; datasetId?: string; maxRows?: number } = {}) {
    const tokens = new EntraTokenProvider({
      loginUrl: endpoint.loginUrl,
      tenantId: "tenant-1",
      secrets: secrets(overrides.secretValues ?? creds),
      clientIdSecret: "powerBiClientId",
      clientSecretSecret: "powerBiClientSecret",
    });
    const client = new PowerBiClient({
      apiUrl: endpoint.apiUrl,
      groupId: "group-1",
      datasetId: overrides.datasetId ?? "dataset-1",
      tokens,
      maxWaitMs: 2_000,
    });
    const registry = new ToolRegistry([createQuerySemanticModelTool({ client, maxRows: overrides.maxRows ?? 50 })]);
    const run = (dax: string) =>
      registry.execute({ id: "call", name: "query_semantic_model", args: { dax } }, { conversationId: "c", turnId: "t", caller: { userId: "u", roles: [] } });
    return { tokens, client, run };
  }

  describe("run", () => {
    it("returns the measure by month as a table, showing October 2026 margin below September's", async () => {
      const { run } = setup();
      const result = await run(MARGIN_BY_MONTH);
      expect(result.status).toBe("success");
      const lines = result.content.split("\n");
      expect(lines[0]).toBe("18 rows (truncated: no)");
      expect(lines[1]).toBe("Date[Month] | [Gross Margin %]");
      const byMonth = Object.fromEntries(lines.slice(2).map((l) => l.split(" | ")).map(([m, v]) => [m, Number(v)]));
      expect(byMonth["2026-09"]! - byMonth["2026-10"]!).toBeGreaterThan(4);
    });

    it("sends the DAX in the executeQueries body with a bearer token from the client-credentials grant", async () => {
      const { run } = setup();
      await run(MARGIN_BY_MONTH);
      expect(endpoint.queryRequests[0]?.authorization).toMatch(/^Bearer eyJ\./);
      expect(endpoint.queryRequests[0]?.body).toEqual({ queries: [{ query: MARGIN_BY_MONTH }], serializerSettings: { includeNulls: true } });
    });

    it("returns a truncated table when the result exceeds the row limit", async () => {
      const { run } = setup({ maxRows: 5 });
      const result = await run(MARGIN_BY_MONTH);
      expect(result.content.split("\n")[0]).toMatch(/^5 rows \(truncated: more rows exist/);
    });

    it("returns the service's DAX error message as a tool error", async () => {
      const { run } = setup();
      const result = await run("EVALUATE 'Nope'");
      expect(result).toEqual({
        status: "error",
        content: "Error: query_semantic_model: the DAX query failed: DatasetExecuteQueriesError: Query (1, 10) Cannot find table 'Nope'.",
      });
    });

    it("returns a not-found error for an unknown dataset", async () => {
      const { run } = setup({ datasetId: "missing" });
      const result = await run(MARGIN_BY_MONTH);
      expect(result.status).toBe("error");
      expect(result.content).toMatch(/ItemNotFound/);
    });

    it("returns a sign-in error without the secret when the client secret is wrong", async () => {
      const { run } = setup({ secretValues: { ...creds, powerBiClientSecret: "wrong" } });
      const result = await run(MARGIN_BY_MONTH);
      expect(result.status).toBe("error");
      expect(result.content).toMatch(/could not sign in to Power BI \(invalid_client\)/);
      expect(result.content).not.toContain("wrong");
      expect(result.content).not.toContain("AADSTS");
    });

    it("returns an error naming the secret store when credentials are missing", async () => {
      const { run } = setup({ secretValues: {} });
      expect((await run(MARGIN_BY_MONTH)).content).toMatch(/credentials are not configured in the secret store/);
    });
  });

  describe("PowerBiClient.executeQuery", () => {
    it("returns rows after waiting out a 429 with Retry-After", async () => {
      const { client } = setup();
      endpoint.throttle(1, "1");
      const started = Date.now();
      const result = await client.executeQuery(MARGIN_BY_MONTH, 50);
      expect(result.rows).toHaveLength(18);
      expect(Date.now() - started).toBeGreaterThanOrEqual(950);
      expect(endpoint.queryRequests).toHaveLength(2);
    });

    it("throws a ToolError telling the model to retry later when Retry-After exceeds the wait limit", async () => {
      const { client } = setup();
      endpoint.throttle(1, "120");
      await expect(client.executeQuery(MARGIN_BY_MONTH, 50)).rejects.toThrow(/throttling requests; try again in 120 s/);
      expect(endpoint.queryRequests).toHaveLength(1);
    });

    it("renews a revoked token once and succeeds", async () => {
      const { client, tokens } = setup();
      await client.executeQuery(MARGIN_BY_MONTH, 50);
      endpoint.revokeTokens();
      await expect(client.executeQuery(MARGIN_BY_MONTH, 50)).resolves.toMatchObject({ truncated: false });
      expect(tokens.requests).toBe(2);
    });
  });

  describe("EntraTokenProvider.getToken", () => {
    it("returns the cached token until it expires", async () => {
      const { tokens } = setup();
      const first = await tokens.getToken();
      expect(await tokens.getToken()).toBe(first);
      expect(tokens.requests).toBe(1);
    });

    it("returns one token to concurrent callers with one request", async () => {
      const { tokens } = setup();
      const all = await Promise.all([tokens.getToken(), tokens.getToken(), tokens.getToken()]);
      expect(new Set(all).size).toBe(1);
      expect(tokens.requests).toBe(1);
    });

    it("returns a new token once the cached one is within the expiry skew", async () => {
      const tokens = new EntraTokenProvider({
        loginUrl: endpoint.loginUrl,
        tenantId: "tenant-1",
        secrets: secrets(creds),
        clientIdSecret: "powerBiClientId",
        clientSecretSecret: "powerBiClientSecret",
        expirySkewMs: 3_599_000,
      });
      const first = await tokens.getToken();
      expect(await tokens.getToken()).not.toBe(first);
    });

    it("throws a ToolError when the secret store lacks the client id", async () => {
      const { tokens } = setup({ secretValues: { powerBiClientSecret: "x" } });
      await expect(tokens.getToken()).rejects.toBeInstanceOf(ToolError);
    });
  });
});
