import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createQuerySemanticModelTool } from "../../../lib/tools/powerbi/query-semantic-model-tool.js";
import { ToolRegistry } from "../../../lib/tools/tool-registry.js";
import type { PowerBiEndpoint } from "../../support/powerbi-endpoint.js";
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

  function setup(overrides: { secretValues?: Record<string, string>; datasetId?: string; maxRows?: number } = {}) {
    const tokens = tokenProvider(endpoint, overrides.secretValues ?? creds);
    const client = powerBiClient(endpoint, tokens, overrides.datasetId);
    const registry = new ToolRegistry([createQuerySemanticModelTool({ client, maxRows: overrides.maxRows ?? 50 })]);
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
});
