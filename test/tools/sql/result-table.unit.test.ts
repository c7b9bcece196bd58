import { describe, expect, it } from "vitest";
import { formatResultTable } from "../../../lib/tools/sql/result-table.js";

describe("result-table", () => {
  describe("formatResultTable", () => {
    it("returns a header with the row count, the columns, then one line per row", () => {
      const table = formatResultTable(
        {
          columns: ["region", "revenue"],
          rows: [
            ["north", 1200],
            ["south", null],
          ],
          truncated: false,
        },
        200,
      );
      expect(table).toBe("2 rows (truncated: no)\nregion | revenue\nnorth | 1200\nsouth | NULL");
    });

    it("returns which limit cut the rows off", () => {
      expect(formatResultTable({ columns: ["a"], rows: [[1]], truncated: "rows" }, 1).split("\n")[0]).toBe(
        "1 row (truncated: more rows exist beyond the 1-row limit; aggregate or filter to see them)",
      );
      expect(formatResultTable({ columns: ["a"], rows: [], truncated: "bytes" }, 1).split("\n")[0]).toMatch(
        /^0 rows \(truncated: more rows exist beyond the result size/,
      );
    });

    it("returns numbers without float noise, pipes escaped, whitespace folded and long cells cut with an ellipsis", () => {
      const table = formatResultTable({ columns: ["v"], rows: [[0.1 + 0.2], ["a|b\n  c"], ["x".repeat(30)]], truncated: false }, 10, 10);
      expect(table.split("\n").slice(2)).toEqual(["0.3", "a\\|b c", `${"x".repeat(9)}…`]);
    });
  });
});
