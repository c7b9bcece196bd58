import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createQuerySemanticModelTool } from "../../../lib/tools/powerbi/query-semantic-model-tool.js";
import { ToolRegistry } from "../../../lib/tools/tool-registry.js";
import { startPowerBiEndpoint, type PowerBiEndpoint } from "../../support/powerbi-endpoint.js";
import { creds, MARGIN_BY_MONTH, powerBiClient, startSampleEndpoint, tokenProvider } from "./powerbi-fixture.js";
import { apiPrincipal } from "../../../lib/auth/principal.js";

describe("query_semantic_model", () => {
  let endpoint: PowerBiEndpoint;

  beforeAll(async () => {
    endpoint = await startSampleEndpoint();
  });
  afterAll(async () => endpoint.close());
  beforeEach(() => {
    endpoint.queryRequests.length = 0;
    endpoint.throttle(0, undefined);
  });

  function setup(overrides: { secretValues?: Record<string, string>; datasetId?: string; maxRows?: number; maxBytes?: number; on?: PowerBiEndpoint } = {}) {
    const on = overrides.on ?? endpoint;
    const tokens = tokenProvider(on, overrides.secretValues ?? creds);
    const client = powerBiClient(on, tokens, overrides.datasetId);
    const registry = new ToolRegistry([createQuerySemanticModelTool({ client, maxRows: overrides.maxRows ?? 50, maxBytes: overrides.maxBytes })]);
    const run = (dax: string) =>
      registry.execute(
        { id: "call", name: "query_semantic_model", args: { dax } },
        { conversationId: "c", turnId: "t", caller: { principal: apiPrincipal("u"), roles: [] } },
      );
    return { run };
  }

  describe("run", () => {
    it("returns the measure by month as a table, showing October 2026 margin below September's", async () => {
      const { run } = setup();
      const result = await run(MARGIN_BY_MONTH);
      expect(result.status).toBe("success");
      const lines = result.content.split("\n");
      expect(lines[0]).toBe("18 rows (truncated: no)");
      expect(lines[1]).toBe("Date[Month] | [Gross Margin %]");
      const byMonth = Object.fromEntries(
        lines
          .slice(2)
          .map((l) => l.split(" | "))
          .map(([m, v]) => [m, Number(v)]),
      );
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

  describe("run, against a service that answers more than asked", () => {
    const DISTINCT_COLUMNS = "EVALUATE 'Distinct columns'";
    const LONG_VALUES = "EVALUATE 'Long values'";
    let hostile: PowerBiEndpoint;

    beforeAll(async () => {
      hostile = await startPowerBiEndpoint({
        tenantId: "tenant-1",
        clientId: creds.powerBiClientId,
        clientSecret: creds.powerBiClientSecret,
        groupId: "group-1",
        datasetId: "dataset-1",
        queries: {
          // Every row names a column of its own: a table of all of them would be rows × 2,000 cells.
          [DISTINCT_COLUMNS]: Array.from({ length: 2_000 }, (_, i) => ({ [`T[c${i}]`]: i })),
          [LONG_VALUES]: Array.from({ length: 200 }, (_, i) => ({ "T[k]": i, "T[text]": "x".repeat(10_000) })),
        },
      });
    });
    afterAll(async () => hostile.close());

    it("returns only the columns of the rows it shows, so 2,000 rows of a column each give a 50-column table at 50 rows", async () => {
      const { run } = setup({ on: hostile, maxRows: 50 });
      const result = await run(DISTINCT_COLUMNS);
      const lines = result.content.split("\n");
      expect(lines[0]).toMatch(/^50 rows \(truncated: more rows exist beyond the 50-row limit/);
      expect(lines[1]!.split(" | ")).toHaveLength(50);
      expect(lines[2]).toBe(["0", ...Array(49).fill("NULL")].join(" | "));
    });

    it("cuts rows off at maxBytes of values, as sql_query does (text by length, a number 8)", async () => {
      const { run } = setup({ on: hostile, maxRows: 200, maxBytes: 100_000 });
      const result = await run(LONG_VALUES);
      // Each row is 10,008 bytes: 9 rows fit in 100,000, the 10th does not.
      expect(result.content.split("\n")[0]).toBe(
        "9 rows (truncated: more rows exist beyond the result size limit; select fewer or shorter columns, or aggregate)",
      );
    });

    it("counts a missing or null cell as 8 bytes, so a wide table of nulls is cut by maxBytes too", async () => {
      const { run } = setup({ on: hostile, maxRows: 200, maxBytes: 100_000 });
      const result = await run(DISTINCT_COLUMNS);
      // n rows of n columns cost 8·n² bytes: 111 rows fit in 100,000.
      expect(result.content.split("\n")[0]).toMatch(/^111 rows \(truncated: more rows exist beyond the result size limit/);
    });
  });
});
