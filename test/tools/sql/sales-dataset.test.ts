import { createHash } from "node:crypto";
import type { Database } from "@sqlite.org/sqlite-wasm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildSalesDatabase, DEFAULT_SALES_SEED, restrictToRegions, SALES_ANCHOR_DATE } from "../../../lib/tools/sql/sales-dataset.js";
import { openDatabaseImage } from "../../../lib/tools/sql/sqlite-wasm.js";

/** sha256 of every row of every table, as the better-sqlite3 build computed it for the default seed and for seed 7. */
const BETTER_SQLITE3_DIGESTS = {
  [DEFAULT_SALES_SEED]: "3e86296462121750bde25d29ba4326bea24df3892e2fcbbd7f54a9f23a52f3de",
  7: "377499e5d6a477f2298312a3de41f40f8d2722b2a5427112dcdb45d928e9914b",
};

async function digest(image: Uint8Array): Promise<string> {
  const db = await openDatabaseImage(image);
  try {
    const hash = createHash("sha256");
    for (const table of ["regions", "customers", "products", "orders", "order_lines"]) {
      for (const row of db.selectArrays(`SELECT * FROM ${table} ORDER BY 1`)) hash.update(JSON.stringify(row));
    }
    return hash.digest("hex");
  } finally {
    db.close();
  }
}

describe("buildSalesDatabase", () => {
  let image: Uint8Array;
  let db: Database;
  beforeAll(async () => {
    image = await buildSalesDatabase();
    db = await openDatabaseImage(image);
  });
  afterAll(() => db.close());

  it("returns the same data for the same seed", async () => {
    expect(await digest(await buildSalesDatabase())).toBe(await digest(image));
  });

  it("returns different data for another seed", async () => {
    expect(await digest(await buildSalesDatabase(7))).not.toBe(await digest(image));
  });

  it("returns, row for row, the data the better-sqlite3 build returned for the same seeds", async () => {
    expect(await digest(image)).toBe(BETTER_SQLITE3_DIGESTS[DEFAULT_SALES_SEED]);
    expect(await digest(await buildSalesDatabase(7))).toBe(BETTER_SQLITE3_DIGESTS[7]);
  });

  it("returns at least 20,000 order lines over the 18 months before the anchor date", () => {
    const row = db.selectObject("SELECT count(*) AS n, min(order_date) AS first, max(order_date) AS last FROM sales") as {
      n: number;
      first: string;
      last: string;
    };
    expect(row.n).toBeGreaterThanOrEqual(20_000);
    expect(row.first >= "2025-05-01").toBe(true);
    expect(row.last < SALES_ANCHOR_DATE).toBe(true);
    expect(db.selectValue("SELECT count(DISTINCT month) FROM sales")).toBe(18);
  });

  it("returns lines whose cost never exceeds list price before discount", () => {
    expect(db.selectValue("SELECT count(*) FROM order_lines WHERE unit_cost >= unit_price OR discount < 0 OR discount >= 1")).toBe(0);
  });
});

describe("restrictToRegions", () => {
  it("returns an image whose orders, lines and customers are of the named regions only, products and regions whole", async () => {
    const whole = await buildSalesDatabase();
    const db = await openDatabaseImage(await restrictToRegions(whole, ["West", "East"]));
    try {
      const regionsOf = (sql: string) => (db.selectValues(sql) as string[]).sort();
      expect(regionsOf("SELECT DISTINCT region FROM sales")).toEqual(["East", "West"]);
      expect(regionsOf("SELECT DISTINCT r.name FROM customers JOIN regions r USING (region_id)")).toEqual(["East", "West"]);
      expect(db.selectValue("SELECT count(*) FROM order_lines WHERE order_id NOT IN (SELECT order_id FROM orders)")).toBe(0);
      expect(db.selectValue("SELECT count(*) FROM regions")).toBe(5);
    } finally {
      db.close();
    }
  });
});
