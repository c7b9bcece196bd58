import { execSync } from "node:child_process";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ToolError } from "../../../lib/errors.js";
import { buildSalesDatabase, SALES_SCHEMA_DESCRIPTION } from "../../../lib/tools/sql/sales-dataset.js";
import { SqliteQueryEngine } from "../../../lib/tools/sql/sqlite-query-engine.js";

const limits = { maxRows: 50, timeoutMs: 5_000 };

describe("SqliteQueryEngine", () => {
  let engine: SqliteQueryEngine;

  beforeAll(() => {
    engine = new SqliteQueryEngine({ image: buildSalesDatabase(), schemaDescription: SALES_SCHEMA_DESCRIPTION });
  });
  afterAll(async () => engine.close());

  describe("query", () => {
    it("returns columns and rows of a read", async () => {
      const result = await engine.query("SELECT name, manager FROM regions ORDER BY region_id", limits);
      expect(result.columns).toEqual(["name", "manager"]);
      expect(result.rows.map((r) => r[0])).toEqual(["North", "South", "East", "West", "Central"]);
      expect(result.truncated).toBe(false);
    });

    it("returns at most maxRows rows and flags the truncation", async () => {
      const result = await engine.query("SELECT line_id FROM order_lines", { ...limits, maxRows: 7 });
      expect(result.rows).toHaveLength(7);
      expect(result.truncated).toBe(true);
    });

    it("returns exactly maxRows rows without truncation when no more exist", async () => {
      const result = await engine.query("SELECT region_id FROM regions", { ...limits, maxRows: 5 });
      expect(result).toMatchObject({ truncated: false });
      expect(result.rows).toHaveLength(5);
    });

    // These bypass the text checker: the connection and SQLite's classification must hold on their own.
    it.each([
      "DELETE FROM orders",
      "UPDATE products SET unit_cost = 0",
      "INSERT INTO regions VALUES (9, 'Moon', 'x')",
      "CREATE TEMP TABLE scratch(x)",
      "DROP VIEW sales",
      "WITH x AS (SELECT 1) DELETE FROM order_lines",
    ])("throws a ToolError and changes nothing for the write %s", async (sql) => {
      await expect(engine.query(sql, limits)).rejects.toBeInstanceOf(ToolError);
      const count = await engine.query("SELECT count(*) FROM order_lines", limits);
      expect(count.rows[0]![0]).toBeGreaterThanOrEqual(20_000);
    });

    it("throws for ATTACH, which SQLite itself counts as read-only, because it returns no rows", async () => {
      const path = join(tmpdir(), `threadwise-attach-${process.pid}.db`);
      await expect(engine.query(`ATTACH DATABASE '${path}' AS evil`, limits)).rejects.toThrow(/return rows/);
      expect(existsSync(path)).toBe(false);
    });

    it("throws for VACUUM INTO and writes no file", async () => {
      const path = join(tmpdir(), `threadwise-vacuum-${process.pid}.db`);
      await expect(engine.query(`VACUUM INTO '${path}'`, limits)).rejects.toBeInstanceOf(ToolError);
      expect(existsSync(path)).toBe(false);
    });

    it("throws for more than one statement", async () => {
      await expect(engine.query("SELECT 1; DELETE FROM orders", limits)).rejects.toThrow(/more than one statement/);
    });

    it("throws a timeout ToolError for a query that never ends, then answers the next query", async () => {
      const started = Date.now();
      await expect(
        engine.query("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c", {
          ...limits,
          timeoutMs: 300,
        }),
      ).rejects.toThrow(/longer than 300 ms/);
      expect(Date.now() - started).toBeLessThan(2_000);
      const next = await engine.query("SELECT count(*) FROM regions", limits);
      expect(next.rows[0]![0]).toBe(5);
    });

    it("answers with a fresh process when the idle one has died", async () => {
      await engine.query("SELECT 1", limits);
      const queryProcesses = execSync(`ps -o pid=,args= --ppid ${process.pid}`, { encoding: "utf8" })
        .split("\n")
        .filter((line) => line.includes("THREADWISE_SQLITE_MODULE"))
        .map((line) => Number(line.trim().split(/\s+/)[0]));
      expect(queryProcesses.length).toBeGreaterThan(0);
      for (const pid of queryProcesses) process.kill(pid, "SIGKILL");
      // A killed child stays a zombie until this process reaps it, which is when the engine hears of its exit.
      for (const pid of queryProcesses) await vi.waitFor(() => expect(() => process.kill(pid, 0)).toThrow(), { timeout: 5_000, interval: 10 });
      const result = await engine.query("SELECT count(*) FROM regions", limits);
      expect(result.rows[0]![0]).toBe(5);
    });

    it("answers overlapping queries independently", async () => {
      const results = await Promise.all(
        [1, 2, 3, 4].map((id) => engine.query(`SELECT name FROM regions WHERE region_id = ${id}`, limits)),
      );
      expect(results.map((r) => r.rows[0]![0])).toEqual(["North", "South", "East", "West"]);
    });
  });
});
