import { describe, it } from "vitest";
import { checkReadOnlySql } from "../../../lib/tools/sql/read-only-sql.js";
import { FRAGMENTS, runShapes } from "../../support/adversarial-text.js";
import { expectLinearWork, LINEAR_WORK_TIMEOUT_MS } from "../../support/linear-work.js";

// Its own file, so that `npm run mutation` leaves it out: it measures CPU time over many repeats, seconds per mutant.
describe("checkReadOnlySql", () => {
  it(
    "decides in time linear in the query",
    () => {
      // Quotes, comments, brackets and blanks are what the lexer scans ahead over; SQLite's dialect has every kind of quote.
      const shapes = runShapes([" ", "\u3000", "'", '"', "`", "[", "]", "(", ")", "-", "/", "*", ";", ...FRAGMENTS]);
      expectLinearWork((sql) => checkReadOnlySql(sql, "sqlite"), { wrap: (text) => `WITH x AS (SELECT ${text}) SELECT 1`, shapes, numRuns: 6 });
    },
    LINEAR_WORK_TIMEOUT_MS,
  );
});
