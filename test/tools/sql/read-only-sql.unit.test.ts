import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { checkReadOnlySql, type SqlDialect } from "../../../lib/tools/sql/read-only-sql.js";
import { WRITES } from "./sql-writes.js";

const READ = "SELECT count(*) FROM orders";

const randomCase = (text: string) =>
  fc
    .array(fc.boolean(), { minLength: text.length, maxLength: text.length })
    .map((flags) => [...text].map((ch, i) => (flags[i] ? ch.toUpperCase() : ch.toLowerCase())).join(""));

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

  it("returns the statement without its trailing semicolon and comments", () => {
    expect(checkReadOnlySql("  WITH t AS (SELECT 1 AS x) SELECT x FROM t ; -- bye\n", "sqlite")).toEqual({
      ok: true,
      statement: "WITH t AS (SELECT 1 AS x) SELECT x FROM t",
    });
  });

  it("returns the statement up to its last token, whatever kind of token ends it", () => {
    for (const statement of ["SELECT (1)", "SELECT 'a;b'", 'SELECT "x"', "SELECT 1 + 2", "VALUES (1, 'a'), (2, 'b')"]) {
      expect(checkReadOnlySql(`${statement} ;\n`, "sqlite")).toEqual({ ok: true, statement });
    }
  });

  it("returns not ok for an unterminated string that could hide a second statement", () => {
    expect(checkReadOnlySql("SELECT 'abc; DROP TABLE orders", "sqlite")).toEqual({ ok: false, reason: "unterminated string literal" });
  });

  it("returns not ok for an unterminated quoted identifier", () => {
    expect(checkReadOnlySql('SELECT "abc; DROP TABLE orders', "athena")).toEqual({ ok: false, reason: "unterminated quoted identifier" });
  });

  it("returns not ok for an unterminated block comment", () => {
    expect(checkReadOnlySql("SELECT 1 /* DROP TABLE orders", "athena")).toEqual({ ok: false, reason: "unterminated comment" });
  });

  it("returns not ok for an empty query", () => {
    expect(checkReadOnlySql(" ; -- nothing", "sqlite")).toEqual({ ok: false, reason: "empty query" });
  });

  it("returns not ok for two statements", () => {
    expect(checkReadOnlySql("SELECT 1; SELECT 2", "sqlite")).toEqual({ ok: false, reason: "only one statement per query is allowed" });
  });

  it("returns not ok in Athena for a table function, whose passthrough query runs in its source's language, unseen by the check", () => {
    for (const sql of [
      "SELECT * FROM TABLE(system.query(query => 'DELETE FROM customers RETURNING *'))",
      "SELECT * FROM table /* fn */ (pg.system.query('UPDATE t SET x = 1 RETURNING x'))",
    ]) {
      expect(checkReadOnlySql(sql, "athena")).toEqual({
        ok: false,
        reason: "table functions (TABLE(...)) are not allowed: a passthrough query runs in its source's own language, which is not checked",
      });
    }
  });

  it("ends a -- comment at a carriage return in Athena, as Trino does, so what follows it is checked", () => {
    expect(checkReadOnlySql("SELECT 1 --\r; SELECT 2\n", "athena")).toEqual({ ok: false, reason: "only one statement per query is allowed" });
    expect(checkReadOnlySql("SELECT * FROM --\rTABLE(system.query(query => 'DELETE FROM t'))\n", "athena").ok).toBe(false);
  });

  it("ends a -- comment only at a line feed in SQLite, as SQLite does", () => {
    expect(checkReadOnlySql("SELECT 1 --\r; DROP TABLE t\n", "sqlite")).toEqual({ ok: true, statement: "SELECT 1" });
  });

  it("returns ok for a Trino array subscript, which SQLite would read as a quoted identifier", () => {
    expect(checkReadOnlySql("SELECT tags[1] FROM events", "athena").ok).toBe(true);
  });

  describe("lexing", () => {
    it("returns the whole statement for minus and division, which only start a comment as -- and /*", () => {
      for (const statement of [
        "SELECT revenue - cost AS margin FROM sales",
        "SELECT revenue-cost AS margin FROM sales",
        "SELECT 2-1 AS one FROM sales",
        "SELECT revenue / units AS price FROM sales",
      ]) {
        expect(checkReadOnlySql(statement, "athena")).toEqual({ ok: true, statement });
      }
    });

    it("returns not ok for a write behind a comment that opens with /*/, whose star does not close it", () => {
      expect(checkReadOnlySql("SELECT 1 /*/ DROP TABLE orders /*/", "sqlite")).toEqual({ ok: true, statement: "SELECT 1" });
      expect(checkReadOnlySql("SELECT 1 /*/ x */ ; DROP TABLE orders", "sqlite").ok).toBe(false);
    });

    it("returns ok for doubled quotes inside a quoted identifier, read as one name", () => {
      const sql = 'WITH "a""b" AS (SELECT 1 AS x) SELECT x FROM "a""b"';
      expect(checkReadOnlySql(sql, "athena")).toEqual({ ok: true, statement: sql });
    });

    it("returns ok in SQLite for write words in backtick- and bracket-quoted names", () => {
      expect(checkReadOnlySql("SELECT `delete`, [drop] FROM t", "sqlite").ok).toBe(true);
    });

    it("returns ok in SQLite for a write word inside a bracketed name, after another word", () => {
      expect(checkReadOnlySql("SELECT [my delete] FROM t", "sqlite")).toEqual({ ok: true, statement: "SELECT [my delete] FROM t" });
    });

    it("reads blanks of every kind between words: tab, line feed to carriage return, and Unicode spaces", () => {
      for (const blank of ["\t", "\n", "\v", "\f", "\r", "\u00a0", "\u3000", "\u2028"]) {
        const sql = `WITH${blank}x AS (SELECT 1 AS n) SELECT n FROM x`;
        expect({ blank, check: checkReadOnlySql(sql, "athena") }).toEqual({ blank, check: { ok: true, statement: sql } });
      }
    });

    it("returns ok for characters that are neither blanks nor words, which the engine judges", () => {
      for (const sql of ["SELECT\u00081", "SELECT 1 AS \u00e9t\u00e9", "SELECT 'a' || 'b' AS ab", "SELECT x FROM t WHERE y ~ 1 OR {z}"]) {
        expect(checkReadOnlySql(sql, "athena")).toEqual({ ok: true, statement: sql });
      }
    });

    it("reads a word from its first letter, A to Z, a to z or underscore, so a write word inside a name is not one", () => {
      const sql = "SELECT Adrop, Zdrop, adrop, zdrop, _drop FROM t";
      expect(checkReadOnlySql(sql, "athena")).toEqual({ ok: true, statement: sql });
    });

    it("reads a bracketed name in SQLite up to its first closing bracket: brackets have no doubled escape", () => {
      expect(checkReadOnlySql("SELECT [a]] ;", "sqlite")).toEqual({ ok: true, statement: "SELECT [a]]" });
    });

    it("returns not ok in Athena for write words in backticks or brackets, which Trino does not read as quotes", () => {
      expect(checkReadOnlySql("SELECT `delete` FROM t", "athena").ok).toBe(false);
      expect(checkReadOnlySql("SELECT m[drop] FROM t", "athena").ok).toBe(false);
    });
  });

  describe("the query proper", () => {
    const refused = { ok: false, reason: "only SELECT or VALUES queries (optionally starting with WITH) are allowed" };

    it.each([
      "(SELECT 1) UNION (SELECT 2)",
      "VALUES (1, 'a'), (2, 'b')",
      "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 3) SELECT n FROM t",
      "WITH a AS (SELECT 1 AS x), b AS (SELECT 2 AS y) SELECT * FROM a, b",
      "WITH a AS NOT MATERIALIZED (SELECT 1 AS x) SELECT x FROM a",
      "WITH a AS MATERIALIZED (SELECT (1) AS x) SELECT x FROM a",
      "WITH a AS (SELECT 1 AS x) (SELECT x FROM a)",
      'WITH "the cte" AS (SELECT 1 AS x) SELECT x FROM "the cte"',
      "SELECT name FROM regions ORDER BY name DESC",
    ])("returns ok for %s", (sql) => {
      expect(checkReadOnlySql(sql, "sqlite")).toEqual({ ok: true, statement: sql });
    });

    it.each([
      "(((",
      "WITH",
      "WITH t",
      "WITH t AS",
      "WITH t AS (SELECT 1)",
      "WITH t(n AS (SELECT 1) SELECT 1",
      "WITH t AS (SELECT 1 SELECT 2",
      "WITH select AS (SELECT 1",
      "WITH t NOT (SELECT 1) SELECT 1",
      "WITH t AS x (SELECT 1) SELECT 1",
      "WITH 'x' AS (SELECT 1) SELECT 1",
      "WITH a AS (SELECT 1) . b AS (SELECT 2) SELECT 1",
    ])("returns not ok for the malformed %s", (sql) => {
      expect(checkReadOnlySql(sql, "sqlite")).toEqual(refused);
    });
  });

  describe("words", () => {
    // Written out here, not imported, so that a word dropped from the checker's list is noticed.
    const writes = [
      "INSERT",
      "UPDATE",
      "DELETE",
      "MERGE",
      "UPSERT",
      "INTO",
      "CREATE",
      "DROP",
      "ALTER",
      "TRUNCATE",
      "RENAME",
      "ATTACH",
      "DETACH",
      "PRAGMA",
      "VACUUM",
      "REINDEX",
      "ANALYZE",
      "GRANT",
      "REVOKE",
      "CALL",
      "EXECUTE",
      "EXEC",
      "PREPARE",
      "DEALLOCATE",
      "UNLOAD",
      "MSCK",
      "OPTIMIZE",
      "COPY",
      "LOAD_EXTENSION",
    ];
    const starters = [
      "BEGIN",
      "COMMIT",
      "ROLLBACK",
      "SAVEPOINT",
      "RELEASE",
      "START",
      "END",
      "SET",
      "RESET",
      "USE",
      "SHOW",
      "DESCRIBE",
      "DESC",
      "EXPLAIN",
      "REFRESH",
      "COMMENT",
    ];

    it.each(writes)("returns not ok for %s anywhere in a SELECT, unless double-quoted", (word) => {
      expect(checkReadOnlySql(`SELECT id FROM t WHERE ${word.toLowerCase()}`, "athena")).toEqual({
        ok: false,
        reason: `"${word}" is not allowed in a read-only query (double-quote it if it is a column name)`,
      });
      expect(checkReadOnlySql(`SELECT "${word.toLowerCase()}" FROM t`, "athena").ok).toBe(true);
    });

    it.each(starters)("returns not ok for a subquery that starts with %s", (word) => {
      expect(checkReadOnlySql(`SELECT * FROM (${word} x)`, "sqlite")).toEqual({ ok: false, reason: `"${word}" cannot start a subquery` });
    });
  });
});
