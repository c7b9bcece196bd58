import { AthenaClient } from "@aws-sdk/client-athena";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { AthenaQueryEngine } from "../../../lib/tools/sql/athena-query-engine.js";
import { buildSalesDatabase, OCTOBER_2026_STORY, SALES_SCHEMA_DESCRIPTION } from "../../../lib/tools/sql/sales-dataset.js";
import { createSqlQueryTool } from "../../../lib/tools/sql/sql-query-tool.js";
import { ToolRegistry } from "../../../lib/tools/tool-registry.js";
import { startAthenaEndpoint, type AthenaEndpoint } from "./athena-endpoint.js";
import { apiPrincipal } from "../../../lib/auth/principal.js";

/** An endpoint of its own with an engine on it, for tests that hold a query running. */
async function heldEndpoint(): Promise<{ endpoint: AthenaEndpoint; engine: AthenaQueryEngine }> {
  const endpoint = await startAthenaEndpoint(await buildSalesDatabase());
  const client = new AthenaClient({
    region: "us-east-1",
    endpoint: endpoint.url,
    credentials: { accessKeyId: "AKIDEXAMPLE", secretAccessKey: "example" },
    maxAttempts: 1,
  });
  const engine = new AthenaQueryEngine({ client, workgroup: "threadwise", database: "sales", catalog: "AwsDataCatalog", schemaDescription: "", pollMs: 20 });
  return { endpoint: { ...endpoint, close: () => (client.destroy(), endpoint.close()) }, engine };
}

describe("AthenaQueryEngine", () => {
  let endpoint: AthenaEndpoint;
  let engine: AthenaQueryEngine;
  let client: AthenaClient;

  beforeAll(async () => {
    endpoint = await startAthenaEndpoint(await buildSalesDatabase());
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
    endpoint.created.length = 0;
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
        rows: [
          [1, "North"],
          [2, "South"],
          [3, "East"],
          [4, "West"],
          [5, "Central"],
        ],
        truncated: false,
      });
      expect(endpoint.calls.filter((c) => c.operation === "GetQueryExecution").length).toBeGreaterThanOrEqual(2);
    });

    it("returns at most maxRows rows, flagged truncated, without paging through the rest", async () => {
      const result = await engine.query("SELECT line_id FROM order_lines", { maxRows: 3, timeoutMs: 5_000 });
      expect(result.rows).toHaveLength(3);
      expect(result.truncated).toBe("rows");
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

    it("returns rows up to the byte limit, flagged truncated by bytes", async () => {
      const result = await engine.query("SELECT name, customer_id FROM customers ORDER BY customer_id", {
        maxRows: 100,
        maxBytes: 200,
        timeoutMs: 5_000,
      });
      expect(result.truncated).toBe("bytes");
      const bytes = result.rows.reduce((sum, [name, id]) => sum + Buffer.byteLength(String(name)) + String(id).length, 0);
      expect(bytes).toBeLessThanOrEqual(200);
      expect(result.rows.length).toBeGreaterThan(0);
    });

    it("stops the query when the caller's signal aborts while it runs", async () => {
      const caller = new AbortController();
      const polled = endpoint.nextCall("GetQueryExecution");
      const run = engine.query("SELECT sleep_forever()", { maxRows: 3, timeoutMs: 60_000, signal: caller.signal });
      await polled;
      caller.abort();
      await expect(run).rejects.toThrow(/cancelled/);
      const [id] = endpoint.created.slice(-1);
      expect(endpoint.calls.filter((c) => c.operation === "StopQueryExecution").map((c) => c.body.QueryExecutionId)).toEqual([id]);
    });
  });

  describe("query with a requestKey", () => {
    const HELD = "SELECT count(*) AS n, 'held_query' AS marker FROM regions";
    const limits = (requestKey: string, signal?: AbortSignal) => ({ maxRows: 10, timeoutMs: 30_000, requestKey, signal });

    it("returns a retry the query its first attempt started, running, instead of starting a second", async () => {
      const { endpoint: athena, engine: held } = await heldEndpoint();
      try {
        const polled = athena.nextCall("GetQueryExecution");
        const first = held.query(HELD, limits("c1:t1:call-1"));
        await polled;
        const started = athena.nextCall("StartQueryExecution");
        const retry = held.query(HELD, limits("c1:t1:call-1"));
        await started;
        athena.release();
        const [a, b] = await Promise.all([first, retry]);
        expect(a.rows).toEqual([[5, "held_query"]]);
        expect(b).toEqual(a);
        expect(athena.created).toHaveLength(1);
      } finally {
        await athena.close();
      }
    });

    it("returns a finished query's results to a retry without running it again", async () => {
      const first = await engine.query("SELECT name FROM regions WHERE region_id = 4", limits("c1:t1:call-2"));
      const retry = await engine.query("SELECT name FROM regions WHERE region_id = 4", limits("c1:t1:call-2"));
      expect(retry).toEqual(first);
      expect(endpoint.created).toHaveLength(1);
      expect(endpoint.calls.filter((c) => c.operation === "StartQueryExecution")).toHaveLength(2);
    });

    it("returns a separate query for another tool call with the same statement", async () => {
      await engine.query("SELECT 1 AS one", limits("c1:t1:call-3"));
      await engine.query("SELECT 1 AS one", limits("c1:t2:call-3"));
      expect(endpoint.created).toHaveLength(2);
    });

    it("returns fresh results to a retry whose first attempt was stopped when its caller gave up", async () => {
      const { endpoint: athena, engine: held } = await heldEndpoint();
      try {
        const caller = new AbortController();
        const polled = athena.nextCall("GetQueryExecution");
        const first = held.query(HELD, limits("c1:t1:call-4", caller.signal));
        await polled;
        caller.abort();
        await expect(first).rejects.toThrow(/cancelled/);
        athena.release();
        const retry = await held.query(HELD, limits("c1:t1:call-4"));
        expect(retry.rows).toEqual([[5, "held_query"]]);
        // The stopped query, then one fresh one; a second retry finds that one and starts nothing.
        expect(athena.created).toHaveLength(2);
        await held.query(HELD, limits("c1:t1:call-4"));
        expect(athena.created).toHaveLength(2);
      } finally {
        await athena.close();
      }
    });
  });

  describe("with sql_query", () => {
    it("returns a retried tool call the query its first attempt ran", async () => {
      const registry = new ToolRegistry([createSqlQueryTool({ engine })]);
      const call = { id: "tooluse-7", name: "sql_query", args: { sql: "SELECT count(*) AS n FROM orders" } };
      const ctx = { conversationId: "c", turnId: "t", caller: { principal: apiPrincipal("u"), roles: [] } };
      const first = await registry.execute(call, ctx);
      expect(await registry.execute(call, ctx)).toEqual(first);
      expect(first.status).toBe("success");
      expect(endpoint.created).toHaveLength(1);
    });

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
      const customers = result.content
        .split("\n")
        .slice(2)
        .map((l) => l.split(" | ")[0]);
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
