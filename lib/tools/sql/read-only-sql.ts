/**
 * Which lexical rules apply: SQLite also quotes identifiers in backticks and brackets; Trino uses
 * brackets for subscripts and has no backtick quoting, so there their contents are checked too.
 */
export type SqlDialect = "sqlite" | "athena";

export type ReadOnlyCheck = { ok: true; statement: string } | { ok: false; reason: string };

/** The query proper (after opening parentheses and any WITH clause) must start with one of these. */
const MAIN_VERBS = new Set(["SELECT", "VALUES"]);
/** Words that may stand between a CTE's name and its body. */
const CTE_MODIFIERS = new Set(["AS", "NOT", "MATERIALIZED"]);

/**
 * Words that never belong in a read-only query of either dialect, wherever they stand outside
 * strings, quoted identifiers and comments. Catching them anywhere, not only first, covers
 * `WITH x AS (...) DELETE ...`, `WITH x AS (INSERT ... RETURNING ...) SELECT` and the like.
 * A column that happens to carry one of these names must be double-quoted.
 */
const FORBIDDEN = new Set([
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
]);

/**
 * Words that start a statement other than a query: harmless-looking (COMMIT, SET, SHOW) but
 * never the start of a subquery or CTE body.
 */
const STATEMENT_STARTERS = new Set([
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
]);

interface Token {
  kind: "word" | "quoted" | "semicolon" | "open" | "close" | "comma" | "other";
  text: string;
  start: number;
  end: number;
}

type Lexed = { ok: true; tokens: Token[] } | { ok: false; reason: string };

// Sticky patterns consume a whole run from a position at once: one regex call per run, not per character.
const BLANKS = /\s+/y;
const WORD = /[A-Za-z_][A-Za-z0-9_$]*/y;
/** A `--` comment: SQLite ends it at a line feed only, Trino at a carriage return or a line feed. */
const LINE_COMMENT = { sqlite: /--[^\n]*\n?/y, athena: /--[^\r\n]*/y } as const;

/** The index after the run `pattern` matches at `at`, or `at` when it matches nothing there. */
function runEnd(pattern: RegExp, sql: string, at: number): number {
  pattern.lastIndex = at;
  return pattern.test(sql) ? pattern.lastIndex : at;
}

function lex(sql: string, dialect: SqlDialect): Lexed {
  const tokens: Token[] = [];
  let i = 0;
  const quoted = (close: string, what: string): number | string => {
    // Returns the index after the closing quote; a doubled quote is an escaped one.
    let j = i + 1;
    for (;;) {
      const k = sql.indexOf(close, j);
      if (k < 0) return `unterminated ${what}`;
      if (close !== "]" && sql[k + 1] === close) {
        j = k + 2;
        continue;
      }
      return k + 1;
    }
  };
  while (i < sql.length) {
    const c = sql[i]!;
    const code = sql.charCodeAt(i);
    if (code === 0x20 || (code >= 0x09 && code <= 0x0d) || (code > 0x7f && /\s/.test(c))) {
      i = runEnd(BLANKS, sql, i);
    } else if (c === "-" && sql[i + 1] === "-") {
      i = runEnd(LINE_COMMENT[dialect], sql, i);
    } else if (c === "/" && sql[i + 1] === "*") {
      // SQLite ends an unterminated block comment at the end of input; reject it to be safe in both dialects.
      const close = sql.indexOf("*/", i + 2);
      if (close < 0) return { ok: false, reason: "unterminated comment" };
      i = close + 2;
    } else if (c === "'" || c === '"' || ((c === "`" || c === "[") && dialect === "sqlite")) {
      const close = c === "[" ? "]" : c;
      const end = quoted(close, c === "'" ? "string literal" : "quoted identifier");
      if (typeof end === "string") return { ok: false, reason: end };
      tokens.push({ kind: c === "'" ? "other" : "quoted", text: sql.slice(i, end), start: i, end });
      i = end;
    } else if ((code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a) || code === 0x5f) {
      const j = runEnd(WORD, sql, i);
      tokens.push({ kind: "word", text: sql.slice(i, j).toUpperCase(), start: i, end: j });
      i = j;
    } else if (c === ";") {
      tokens.push({ kind: "semicolon", text: c, start: i, end: i + 1 });
      i++;
    } else {
      const kind = c === "(" ? "open" : c === ")" ? "close" : c === "," ? "comma" : "other";
      tokens.push({ kind, text: c, start: i, end: i + 1 });
      i++;
    }
  }
  return { ok: true, tokens };
}

/** Index just past the parenthesis that closes the one opened at `open`, or -1. */
function skipBalanced(tokens: Token[], open: number): number {
  let depth = 0;
  for (let i = open; i < tokens.length; i++) {
    if (tokens[i]!.kind === "open") depth++;
    else if (tokens[i]!.kind === "close" && --depth === 0) return i + 1;
  }
  return -1;
}

/**
 * The first token of the query proper: skips opening parentheses and walks a WITH clause
 * (`WITH [RECURSIVE] name [(columns)] AS [NOT] [MATERIALIZED] (body), ...`) so that whatever
 * follows the last CTE is what gets checked, not the word WITH. Undefined if the clause is malformed.
 */
function mainQueryStart(tokens: Token[]): Token | undefined {
  let i = 0;
  while (tokens[i]?.kind === "open") i++;
  if (tokens[i]?.kind !== "word" || tokens[i]!.text !== "WITH") return tokens[i];
  i++;
  if (tokens[i]?.kind === "word" && tokens[i]!.text === "RECURSIVE") i++;
  for (;;) {
    if (tokens[i]?.kind !== "word" && tokens[i]?.kind !== "quoted") return undefined;
    i++;
    if (tokens[i]?.kind === "open") i = skipBalanced(tokens, i);
    if (i < 0 || tokens[i]?.kind !== "word" || tokens[i]!.text !== "AS") return undefined;
    while (tokens[i]?.kind === "word" && CTE_MODIFIERS.has(tokens[i]!.text)) i++;
    if (tokens[i]?.kind !== "open") return undefined;
    i = skipBalanced(tokens, i);
    if (i < 0) return undefined;
    if (tokens[i]?.kind !== "comma") break;
    i++;
  }
  while (tokens[i]?.kind === "open") i++;
  return tokens[i];
}

/**
 * Decides whether `sql` is exactly one read-only query. Lexes the text the way the engine
 * will (strings, quoted identifiers, both comment styles, doubled-quote escapes), then requires
 * a single statement that starts with SELECT, WITH or VALUES and contains no word that writes,
 * changes settings or reaches outside the database. For SQLite this is the first of three
 * guards (the read-only connection and SQLite's own classification follow); for Athena it is
 * the one in our code, beside the workgroup's IAM permissions.
 */
export function checkReadOnlySql(sql: string, dialect: SqlDialect): ReadOnlyCheck {
  const lexed = lex(sql, dialect);
  if (!lexed.ok) return lexed;
  const tokens = [...lexed.tokens];
  while (tokens.length > 0 && tokens[tokens.length - 1]!.kind === "semicolon") tokens.pop();
  if (tokens.length === 0) return { ok: false, reason: "empty query" };
  if (tokens.some((t) => t.kind === "semicolon")) return { ok: false, reason: "only one statement per query is allowed" };
  const main = mainQueryStart(tokens);
  if (main?.kind !== "word" || !MAIN_VERBS.has(main.text)) {
    return { ok: false, reason: "only SELECT or VALUES queries (optionally starting with WITH) are allowed" };
  }
  const nested = tokens.find((t, i) => i > 0 && tokens[i - 1]!.kind === "open" && t.kind === "word" && STATEMENT_STARTERS.has(t.text));
  if (nested) return { ok: false, reason: `"${nested.text}" cannot start a subquery` };
  const forbidden = tokens.find((t) => t.kind === "word" && FORBIDDEN.has(t.text));
  if (forbidden) {
    return {
      ok: false,
      reason: `"${forbidden.text}" is not allowed in a read-only query (double-quote it if it is a column name)`,
    };
  }
  // Athena's federated passthrough (`TABLE(catalog.system.query('...'))`) sends a string to another engine as it stands.
  if (dialect === "athena" && tokens.some((t, i) => t.kind === "word" && t.text === "TABLE" && tokens[i + 1]?.kind === "open")) {
    return { ok: false, reason: "table functions (TABLE(...)) are not allowed: a passthrough query runs in its source's own language, which is not checked" };
  }
  const last = tokens[tokens.length - 1]!;
  return { ok: true, statement: sql.slice(0, last.end).trim() };
}
