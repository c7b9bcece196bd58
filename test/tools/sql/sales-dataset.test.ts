import { createHash } from "node:crypto";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { buildSalesDatabase, SALES_ANCHOR_DATE } from "../../../lib/tools/sql/sales-dataset.js";

function digest(image: Buffer): string {
  const db = new Database(image, { readonly: true });
  try {
    const hash = createHash("sha256");
    for (const table of ["regions", "customers", "products", "orders", "order_lines"]) {
      for (const row of db.prepare(`SELECT * FROM ${table} ORDER BY 1`).raw(true).iterate()) hash.update(JSON.stringify(row));
    }
    return hash.digest("hex");
  } finally {
    db.close();
  }
}

describe("buildSalesDatabase", () => {
  const image = buildSalesDatabase();
  const db = new Database(image, { readonly: true });

  it("returns the same data for the same seed", () => {
    expect(digest(buildSalesDatabase())).toBe(digest(image));
  });

  it("returns different data for another seed", () => {
    expect(digest(buildSalesDatabase(7))).not.toBe(digest(image));
  });

  it("returns at least 20,000 order lines over the 18 months before the anchor date", () => {
    const row = db.prepare("SELECT count(*) AS n, min(order_date) AS first, max(order_date) AS last FROM sales").get() as {
      n: number;
      first: string;
      last: string;
    };
    expect(row.n).toBeGreaterThanOrEqual(20_000);
    expect(row.first >= "2025-05-01").toBe(true);
    expect(row.last < SALES_ANCHOR_DATE).toBe(true);
    const months = db.prepare("SELECT count(DISTINCT month) AS m FROM sales").get() as { m: number };
    expect(months.m).toBe(18);
  });

  it("returns lines whose cost never exceeds list price before discount", () => {
    const bad = db.prepare("SELECT count(*) AS n FROM order_lines WHERE unit_cost >= unit_price OR discount < 0 OR discount >= 1").get() as {
      n: number;
    };
    expect(bad.n).toBe(0);
  });
});
