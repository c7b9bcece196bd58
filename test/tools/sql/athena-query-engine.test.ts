import { AthenaClient } from "@aws-sdk/client-athena";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { AthenaQueryEngine } from "../../../lib/tools/sql/athena-query-engine.js";
import { buildSalesDatabase, OCTOBER_2026_STORY, SALES_SCHEMA_DESCRIPTION } from "../../../lib/tools/sql/sales-dataset.js";
import { createSqlQueryTool } from "../../../lib/tools/sql/sql-query-tool.js";
import { ToolRegistry } from "../../../lib/tools/tool-registry.js";
import { startAthenaEndpoint, type AthenaEndpoint } from "./athena-endpoint.js";
import { apiPrincipal } from "../../../lib/auth/principal.js";

describe("AthenaQueryEngine", () => {
  let endpoint: AthenaEndpoint;
  let engine: AthenaQueryEngine;
  let client: AthenaClient;

  beforeAll(async () => {
    endpoint = await startAthenaEndpoint(buildSalesDatabase());
    client = new AthenaClient({
      region: "us-east-1",
      endpoint: endpoint.url,
      credentials: { accessKeyId: "AKIDEXAMPLE", secretAccessKey: "example" },
      maxAttempts: 1,
    });
    engine = new AthenaQueryEngine({
      client,
      workgroup: "threadwise",
      database: "sales",
      catalog: "AwsDataCatalog",
      outputLocation: "s3://threadwise-athena-results/",
      schemaDescription: SALES_SCHEMA_DESCRIPTION,
      pollMs: 20,
    });
  });
  afterAll(async () => {
    client.destroy();
    await endpoint.close();
  });
  beforeEach(() => {
    endpoint.calls.length = 0;
  });

  describe("query", () => {
    it("starts the query in the configured workgroup, database and output location", async () => {
      await engine.query("SELECT 1 AS one", { maxRows: 10, timeoutMs: 5_000 });
      expect(endpoint.calls[0]).toEqual({
        operation: "StartQueryExecution",
        body: expect.objectContaining({
          QueryString: "SELECT 1 AS one",
          WorkGroup: "threadwise",
          QueryExecutionContext: { Database: "sales", Catalog: "AwsDataCatalog" },
          ResultConfiguration: { OutputLocation: "s3://threadwise-athena-results/" },
        }),
      });
    });

    it("returns typed rows without the header row, polling until the query succeeds", async () => {
      const result = await engine.query("SELECT region_id, name FROM regions ORDER BY region_id", { maxRows: 10, timeoutMs: 5_000 });
      expect(result).toEqual({
        columns: ["region_id", "name"],
        rows: [[1, "North"], [2, "South"], [3, "East"], [4, "West"], [5, "Central"]],
        truncated: false,
      });
      expect(endpoint.calls.filter((c) => c.operation === "GetQueryExecution").length).toBeGreaterThanOrEqual(2);
    });

    it("returns at most maxRows rows, flagged truncated, without paging through the rest", async () => {
      const result = await engine.query("SELECT line_id FROM order_lines", { maxRows: 3, timeoutMs: 5_000 });
      expect(result.rows).toHaveLength(3);
      expect(result.truncated).toBe(true);
      expect(endpoint.calls.filter((c) => c.operation === "GetQueryResults")).toHaveLength(1);
    });

    it("throws the failure reason Athena gives", async () => {
      await expect(engine.query("SELECT nope FROM regions", { maxRows: 3, timeoutMs: 5_000 })).rejects.toThrow(
        /Athena query failed: SYNTAX_ERROR.*no such column: nope/,
      );
    });

    it("stops the query and throws a timeout ToolError past the time limit", async () => {
      await expect(engine.query("SELECT sleep_forever()", { maxRows: 3, timeoutMs: 300 })).rejects.toThrow(/longer than 300 ms/);
      expect(endpoint.calls.some((c) => c.operation === "StopQueryExecution")).toBe(true);
    });
  });

  describe("with sql_query", () => {
    it("answers which customers drove October's margin fall", async () => {
      const registry = new ToolRegistry([createSqlQueryTool({ engine, maxRows: 3 })]);
      const result = await registry.execute(
        {
          id: "1",
          name: "sql_query",
          args: { sql: "SELECT customer, sum(discount_amount) AS d FROM sales WHERE month = '2026-10' GROUP BY customer ORDER BY d DESC" },
        },
        { conversationId: "c", turnId: "t", caller: { principal: apiPrincipal("u"), roles: [] } },
      );
      const customers = result.content.split("\n").slice(2).map((l) => l.split(" | ")[0]);
      expect(customers.sort()).toEqual([...OCTOBER_2026_STORY.discountedCustomers].sort());
    });

    it("refuses a write before Athena sees it", async () => {
      const registry = new ToolRegistry([createSqlQueryTool({ engine })]);
      const result = await registry.execute(
        { id: "2", name: "sql_query", args: { sql: "SELECT 1; DROP TABLE orders" } },
        { conversationId: "c", turnId: "t", caller: { principal: apiPrincipal("u"), roles: [] } },
      );
      expect(result.status).toBe("error");
      expect(endpoint.calls).toHaveLength(0);
    });
  });
});
