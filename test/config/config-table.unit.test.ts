import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { CONFIG_TABLE_END, CONFIG_TABLE_START, readmeConfigTable, withConfigTable } from "../../lib/config/config-table.js";
import { ValidationError } from "../../lib/errors.js";

describe("config-table", () => {
  describe("readmeConfigTable", () => {
    it("returns the table docs/configuration.md holds between its markers (run `npm run docs:config` when this fails)", async () => {
      const readme = await readFile(new URL("../../docs/configuration.md", import.meta.url), "utf8");
      const between = readme.slice(readme.indexOf(CONFIG_TABLE_START) + CONFIG_TABLE_START.length, readme.indexOf(CONFIG_TABLE_END)).trim();
      expect(between).toBe(readmeConfigTable());
    });

    it("returns a row per setting with its default and meaning", () => {
      const table = readmeConfigTable();
      expect(table).toContain("| `MONGODB_DB` | `threadwise` | database name |");
      expect(table).toContain("| `LEASE_TTL_MS` | 120000 |");
      expect(table).toContain("| `RECALL_MAX_TOKENS` | 1500 |");
    });
  });

  describe("withConfigTable", () => {
    it("returns the README with a stale table replaced and the text around it kept", () => {
      const readme = `intro\n${CONFIG_TABLE_START}\n| old |\n${CONFIG_TABLE_END}\noutro\n`;
      expect(withConfigTable(readme)).toBe(`intro\n${CONFIG_TABLE_START}\n${readmeConfigTable()}\n${CONFIG_TABLE_END}\noutro\n`);
    });

    it("throws when the README has no markers", () => {
      expect(() => withConfigTable("no table here")).toThrow(ValidationError);
    });
  });
});
