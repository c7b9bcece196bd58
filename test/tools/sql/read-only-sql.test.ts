import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { checkReadOnlySql, type SqlDialect } from "../../../lib/tools/sql/read-only-sql.js";
import { WRITES } from "./sql-writes.js";
import { FRAGMENTS, runShapes } from "../../support/adversarial-text.js";
import { expectLinearWork, LINEAR_WORK_TIMEOUT_MS } from "../../support/linear-work.js";


const READ = "SELECT count(*) FROM orders";

const randomCase = (text: string) =>
  fc.array(fc.boolean(), { minLength: text.length, maxLength: text.length }).map((flags) =>
    [...text].map((ch, i) => (flags[i] ? ch.toUpperCase() : ch.toLowerCase())).join(""),
  );

/** Whitespace and comments that may stand between any two tokens. */
const gap = fc.constantFrom(" ", "\n", "\t", "  ", " /* x */ ", "/**/", " -- note\n", "\r\n", " /* ; DROP */ ");

/** Replaces single spaces in `text` by arbitrary gaps (outside quotes in our statements). */
const spaced = (text: string) =>
  fc.array(gap, { minLength: 64, maxLength: 64 }).map((gaps) => {
    let n = 0;
    return text.replace(/ /g, () => gaps[n++ % gaps.length]!);
  });

/** Every way we know to smuggle a write next to, inside or behind a read. */
const hidden = fc
  .tuple(fc.constantFrom(...WRITES), fc.integer({ min: 0, max: 13 }), fc.constantFrom("", ";", " ; ", ";\n-- done"))
  .chain(([write, shape, tail]) =>
    fc.tuple(randomCase(write), spaced(write)).map(([cased, gapped]) => {
      const w = shape % 2 === 0 ? cased : gapped;
      switch (shape) {
        case 0:
        case 1:
          return `${w}${tail}`;
        case 2:
          return `${READ}; ${w}${tail}`;
        case 3:
          return `/* read only, honest */ ${w}`;
        case 4:
          return `WITH x AS (SELECT 1) ${w}${tail}`;
        case 5:
          return `WITH x AS (${w} RETURNING *) SELECT * FROM x`;
        case 6:
          return `SELECT 'it''s fine; really'; ${w}`;
        case 7:
          return `SELECT "a""b" FROM t; ${w}`;
        case 8:
          return `${READ} -- comment ends here\n; ${w}`;
        case 9:
          return `(${READ}) ; ${w}`;
        case 10:
          return `SELECT * FROM (${w})`;
        case 11:
          return `${READ} /* ; */ ; /* */ ${w}`;
        case 12:
          return `SELECT \`a;b\`, [c;d] FROM t;\u00a0${w}`;
        default:
          return `SELECT 1\n;\u2003${w}`;
      }
    }),
  );

describe("checkReadOnlySql", () => {
  for (const dialect of ["sqlite", "athena"] as SqlDialect[]) {
    describe(dialect, () => {
      it("returns not ok for every write, however it is hidden", () => {
        fc.assert(
          fc.property(hidden, (sql) => {
            expect(checkReadOnlySql(sql, dialect).ok).toBe(false);
          }),
          { numRuns: 2_000 },
        );
      });

      it("returns ok for a read with write words only inside strings, quoted identifiers and comments", () => {
        const decoy = fc.constantFrom(...WRITES).map((w) => w.replace(/'/g, "''"));
        fc.assert(
          fc.property(decoy, fc.constantFrom("select", "SELECT", "SeLeCt"), (w, select) => {
            const sql = `/* ${w.replace(/\*\//g, "")} */ ${select} '${w}; ' AS "${w.replace(/"/g, '""')}", count(*) FROM orders -- ${w}\n;`;
            const check = checkReadOnlySql(sql, dialect);
            expect(check).toMatchObject({ ok: true });
          }),
          { numRuns: 300 },
        );
      });
    });
  }

  it("decides in time linear in the query", () => {
    // Quotes, comments, brackets and blanks are what the lexer scans ahead over; SQLite's dialect has every kind of quote.
    const shapes = runShapes([" ", "\u3000", "'", '"', "`", "[", "]", "(", ")", "-", "/", "*", ";", ...FRAGMENTS]);
    expectLinearWork((sql) => checkReadOnlySql(sql, "sqlite"), { wrap: (text) => `WITH x AS (SELECT ${text}) SELECT 1`, shapes, numRuns: 6 });
  }, LINEAR_WORK_TIMEOUT_MS);

  it("returns the statement without its trailing semicolon and comments", () => {
    expect(checkReadOnlySql("  WITH t AS (SELECT 1 AS x) SELECT x FROM t ; -- bye\n", "sqlite")).toEqual({
      ok: true,
      statement: "WITH t AS (SELECT 1 AS x) SELECT x FROM t",
    });
  });

  it("returns not ok for an unterminated string that could hide a second statement", () => {
    expect(checkReadOnlySql("SELECT 'abc; DROP TABLE orders", "sqlite")).toEqual({ ok: false, reason: "unterminated string literal" });
  });

  it("returns not ok for an unterminated block comment", () => {
    expect(checkReadOnlySql("SELECT 1 /* DROP TABLE orders", "athena").ok).toBe(false);
  });

  it("returns not ok for an empty query", () => {
    expect(checkReadOnlySql(" ; -- nothing", "sqlite")).toEqual({ ok: false, reason: "empty query" });
  });

  it("returns ok for a Trino array subscript, which SQLite would read as a quoted identifier", () => {
    expect(checkReadOnlySql("SELECT tags[1] FROM events", "athena").ok).toBe(true);
  });
});
