import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ToolError } from "../../../lib/errors.js";
import { buildSalesDatabase, SALES_SCHEMA_DESCRIPTION } from "../../../lib/tools/sql/sales-dataset.js";
import { DEFAULT_SQLITE_HEAP_BYTES, SqliteQueryEngine, type SqliteQueryEngineOptions } from "../../../lib/tools/sql/sqlite-query-engine.js";

const limits = { maxRows: 50, timeoutMs: 5_000 };
const NEVER_ENDS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c";
const MiB = 2 ** 20;

describe("SqliteQueryEngine", () => {
  let image: Uint8Array;
  let engine: SqliteQueryEngine;
  const engines: SqliteQueryEngine[] = [];
  const makeEngine = (options: Partial<SqliteQueryEngineOptions> = {}) => {
    const made = new SqliteQueryEngine({ image: async () => image, schemaDescription: SALES_SCHEMA_DESCRIPTION, ...options });
    engines.push(made);
    return made;
  };

  beforeAll(async () => {
    image = await buildSalesDatabase();
    engine = makeEngine();
  });
  afterAll(async () => Promise.all(engines.map((e) => e.close())));

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
      expect(result.truncated).toBe("rows");
    });

    it("returns exactly maxRows rows without truncation when no more exist", async () => {
      const result = await engine.query("SELECT region_id FROM regions", { ...limits, maxRows: 5 });
      expect(result).toMatchObject({ truncated: false });
      expect(result.rows).toHaveLength(5);
    });

    it("returns rows up to maxBytes and flags the truncation by bytes", async () => {
      // 10 bytes of text and an 8-byte integer per row: two rows fit in 40 bytes, the third does not.
      const result = await engine.query("SELECT printf('%010d', line_id), line_id FROM order_lines ORDER BY line_id", { ...limits, maxBytes: 40 });
      expect(result.rows).toEqual([
        ["0000000001", 1],
        ["0000000002", 2],
      ]);
      expect(result.truncated).toBe("bytes");
    });

    // These bypass the text checker: the connection and SQLite's classification must hold on their own.
    it.each([
      "DELETE FROM orders",
      "UPDATE products SET unit_cost = 0",
      "INSERT INTO regions VALUES (9, 'Moon', 'x')",
      "DELETE FROM orders RETURNING order_id",
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

    it("returns the one statement when only comments follow it", async () => {
      const result = await engine.query("SELECT 1 AS one; -- done\n/* really */", limits);
      expect(result.rows).toEqual([[1]]);
    });

    it("throws a timeout ToolError for a query that never ends, then answers the next query", async () => {
      const started = Date.now();
      await expect(engine.query(NEVER_ENDS, { ...limits, timeoutMs: 300 })).rejects.toThrow(/longer than 300 ms/);
      expect(Date.now() - started).toBeLessThan(2_000);
      const next = await engine.query("SELECT count(*) FROM regions", limits);
      expect(next.rows[0]![0]).toBe(5);
    });

    it("answers overlapping queries independently", async () => {
      const results = await Promise.all([1, 2, 3, 4].map((id) => engine.query(`SELECT name FROM regions WHERE region_id = ${id}`, limits)));
      expect(results.map((r) => r.rows[0]![0])).toEqual(["North", "South", "East", "West"]);
    });
  });

  describe("query limits inside the engine", () => {
    it("throws before building a value past the length limit, and the process does not grow with it", async () => {
      await engine.query("SELECT 1", limits);
      const before = process.memoryUsage().rss;
      // 40 MB of text: with better-sqlite3 this grew the server by 460 MB.
      await expect(engine.query("SELECT printf('%.*c', 40000000, 'x')", limits)).rejects.toThrow(/grew past 1000000 bytes/);
      expect(process.memoryUsage().rss - before).toBeLessThan(32 * MiB);
      expect(engine.stats.peakMemoryBytes).toBeLessThanOrEqual(DEFAULT_SQLITE_HEAP_BYTES + 16 * MiB);
    });

    it("throws out of memory for a query that needs more than the heap limit, and answers the next query", async () => {
      const small = makeEngine({ heapBytes: 16 * MiB });
      const sort = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 5000000) SELECT x FROM c ORDER BY random()";
      await expect(small.query(sort, { ...limits, timeoutMs: 30_000 })).rejects.toThrow(/more than the 16 MiB a query may use/);
      expect(small.stats.peakMemoryBytes).toBeLessThanOrEqual(32 * MiB);
      const next = await small.query("SELECT count(*) FROM regions", limits);
      expect(next.rows[0]![0]).toBe(5);
    });

    it("throws when a result without a byte limit outgrows the worker's heap, then answers the next query from a fresh worker", async () => {
      const result = engine.query("SELECT printf('%.*c', 900000, 'x') FROM order_lines", { ...limits, maxRows: 200 });
      await expect(result).rejects.toThrow(/more memory than a query may use/);
      const next = await engine.query("SELECT count(*) FROM regions", limits);
      expect(next.rows[0]![0]).toBe(5);
    });
  });

  describe("query pool", () => {
    it("starts no more workers than the pool size under a flood, queues up to the queue size and refuses the rest as busy", async () => {
      const pool = makeEngine({ poolSize: 2, queueSize: 3 });
      const flood = await Promise.allSettled(Array.from({ length: 12 }, (_, i) => pool.query(`SELECT ${i} AS n, count(*) FROM order_lines`, limits)));
      const busy = flood.filter((r) => r.status === "rejected" && /^busy: 2 queries are running and 3 waiting/.test((r.reason as Error).message));
      const answered = flood.flatMap((r) => (r.status === "fulfilled" ? [r.value.rows[0]![0]] : []));
      expect(busy).toHaveLength(7);
      expect(answered).toEqual([0, 1, 2, 3, 4]);
      expect(pool.stats).toMatchObject({ started: 2, peakWorkers: 2 });
    });

    it("throws cancelled for a waiting query and for a running one when their callers give up", async () => {
      const pool = makeEngine({ poolSize: 1, queueSize: 1 });
      const running = new AbortController();
      const waiting = new AbortController();
      const first = pool.query(NEVER_ENDS, { ...limits, timeoutMs: 20_000, signal: running.signal });
      const second = pool.query("SELECT 1", { ...limits, signal: waiting.signal });
      await new Promise((resolve) => setImmediate(resolve));
      expect(pool.stats.queued).toBe(1);
      waiting.abort();
      await expect(second).rejects.toThrow(/cancelled/);
      const stopped = Date.now();
      running.abort();
      await expect(first).rejects.toThrow(/cancelled/);
      expect(Date.now() - stopped).toBeLessThan(2_000);
      const next = await pool.query("SELECT count(*) FROM regions", limits);
      expect(next.rows[0]![0]).toBe(5);
      expect(pool.stats).toMatchObject({ started: 2, peakWorkers: 1 });
    });
  });
});
