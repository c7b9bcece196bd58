import { describe, expect, it } from "vitest";
import { loadSqlite, openDatabaseImage, sqliteModuleUrl } from "../../../lib/tools/sql/sqlite-wasm.js";

/** A database image made with the library itself: one table, two rows. */
async function image(): Promise<Uint8Array> {
  const { oo1, capi } = await loadSqlite();
  const db = new oo1.DB(":memory:", "c");
  db.exec("CREATE TABLE sales (region TEXT, revenue REAL); INSERT INTO sales VALUES ('North', 1.5), ('West', 2.5);");
  const bytes = capi.sqlite3_js_db_export(db);
  db.close();
  return bytes;
}

describe("sqlite-wasm", () => {
  describe("sqliteModuleUrl", () => {
    it("returns a file URL of the package's entry", () => {
      expect(sqliteModuleUrl()).toMatch(/^file:\/\/.*@sqlite\.org\/sqlite-wasm\//);
    });
  });

  describe("loadSqlite", () => {
    it("returns the same library on every call", async () => {
      expect(await loadSqlite()).toBe(await loadSqlite());
    });
  });

  describe("openDatabaseImage", () => {
    it("returns the image's database, readable", async () => {
      const db = await openDatabaseImage(await image());
      try {
        expect(db.selectValues("SELECT region FROM sales ORDER BY region")).toEqual(["North", "West"]);
      } finally {
        db.close();
      }
    });

    it("returns a database that refuses writes", async () => {
      const db = await openDatabaseImage(await image());
      try {
        expect(() => db.exec("DELETE FROM sales")).toThrow(/readonly/i);
      } finally {
        db.close();
      }
    });
  });
});
