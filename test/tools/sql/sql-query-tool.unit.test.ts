import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildSalesDatabase, OCTOBER_2026_STORY, SALES_SCHEMA_DESCRIPTION } from "../../../lib/tools/sql/sales-dataset.js";
import { createSqlQueryTool } from "../../../lib/tools/sql/sql-query-tool.js";
import { SqliteQueryEngine } from "../../../lib/tools/sql/sqlite-query-engine.js";
import { ToolRegistry } from "../../../lib/tools/tool-registry.js";
import { WRITES } from "./sql-writes.js";
import { apiPrincipal } from "../../../lib/auth/principal.js";

const caller = { principal: apiPrincipal("u1"), roles: [] };
const ctx = { conversationId: "c1", turnId: "t1", caller };

/** Parses the tool's pipe table back into records, as a reader of the output would. */
function parseTable(content: string): { header: string; rows: Record<string, string>[] } {
  const [header, columns, ...lines] = content.split("\n");
  const names = columns!.split(" | ");
  return {
    header: header!,
    rows: lines.map((line) => Object.fromEntries(line.split(" | ").map((v, i) => [names[i], v]))),
  };
}

describe("sql_query", () => {
  let engine: SqliteQueryEngine;
  let registry: ToolRegistry;
  let call = 0;
  const run = (sql: string) => registry.execute({ id: `q${++call}`, name: "sql_query", args: { sql } }, ctx);

  beforeAll(() => {
    engine = new SqliteQueryEngine({ image: () => buildSalesDatabase(), schemaDescription: SALES_SCHEMA_DESCRIPTION });
    registry = new ToolRegistry([createSqlQueryTool({ engine, maxRows: 25, timeoutMs: 5_000 })]);
  });
  afterAll(async () => engine.close());

  describe("run", () => {
    it("returns a compact table with the row count", async () => {
      const result = await run("SELECT name, manager FROM regions ORDER BY region_id LIMIT 2");
      expect(result).toEqual({
        status: "success",
        content: "2 rows (truncated: no)\nname | manager\nNorth | Ingrid Solberg\nSouth | Marcus Reyes",
      });
    });

    it("returns a truncated table at the row limit", async () => {
      const result = await run("SELECT line_id FROM order_lines");
      const table = parseTable(result.content);
      expect(table.header).toMatch(/^25 rows \(truncated: more rows exist beyond the 25-row limit/);
      expect(table.rows).toHaveLength(25);
    });

    it("answers why margin fell last month: October 2026 margin is well below September's", async () => {
      const result = await run(`
        SELECT month, round(100.0 * sum(gross_profit) / sum(revenue), 2) AS margin_pct
        FROM sales WHERE month IN ('2026-08', '2026-09', '2026-10') GROUP BY month ORDER BY month`);
      const margins = Object.fromEntries(parseTable(result.content).rows.map((r) => [r.month, Number(r.margin_pct)]));
      expect(margins["2026-09"]! - margins["2026-10"]!).toBeGreaterThan(4);
      expect(Math.abs(margins["2026-08"]! - margins["2026-09"]!)).toBeLessThan(1.5);
    });

    it("answers which customers drove it: the three discounted West accounts lead October's discounts", async () => {
      const result = await run(`
        SELECT customer, region, round(sum(discount_amount)) AS discount, round(100.0 * sum(gross_profit) / sum(revenue), 1) AS margin_pct
        FROM sales WHERE month = '2026-10' GROUP BY customer, region ORDER BY discount DESC LIMIT 3`);
      const rows = parseTable(result.content).rows;
      expect(rows.map((r) => r.customer).sort()).toEqual([...OCTOBER_2026_STORY.discountedCustomers].sort());
      expect(rows.every((r) => r.region === "West" && Number(r.margin_pct) < 10)).toBe(true);
    });

    it("answers the second driver: Networking unit costs rose in October while list prices did not", async () => {
      const result = await run(`
        SELECT month, round(avg(l.unit_cost / l.unit_price), 4) AS cost_ratio
        FROM order_lines l JOIN orders o USING (order_id) JOIN products p USING (product_id)
        JOIN (SELECT DISTINCT substr(order_date, 1, 7) AS month FROM orders) m ON m.month = substr(o.order_date, 1, 7)
        WHERE p.category = 'Networking' AND m.month IN ('2026-09', '2026-10') GROUP BY month ORDER BY month`);
      const [sep, oct] = parseTable(result.content).rows.map((r) => Number(r.cost_ratio));
      expect(oct! / sep!).toBeCloseTo(1 + OCTOBER_2026_STORY.costIncrease, 2);
    });

    it("returns a tool error naming the reason for a write", async () => {
      const result = await run("WITH x AS (SELECT 1) DELETE FROM orders");
      expect(result).toEqual({ status: "error", content: expect.stringMatching(/^Error: sql_query: query refused: only SELECT or VALUES queries/) });
    });

    it("returns a tool error for SQL the engine rejects, with SQLite's message", async () => {
      const result = await run("SELECT no_such_column FROM orders");
      expect(result.status).toBe("error");
      expect(result.content).toMatch(/no such column: no_such_column/);
    });

    it("refuses every hidden write and leaves the data unchanged", async () => {
      const before = (await run("SELECT count(*) AS n FROM order_lines")).content;
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...WRITES),
          fc.constantFrom("", "SELECT 1; ", "WITH x AS (SELECT 1) ", "/* */ ", "sElEcT 'a;b'; "),
          async (write, prefix) => {
            const result = await run(`${prefix}${write}`);
            expect(result.status).toBe("error");
          },
        ),
        { numRuns: 150 },
      );
      expect((await run("SELECT count(*) AS n FROM order_lines")).content).toBe(before);
    });
  });
});
