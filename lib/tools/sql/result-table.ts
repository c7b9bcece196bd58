import type { QueryResult } from "./query-engine.js";

/** Longest cell text kept in a result table; longer values end with an ellipsis. */
export const DEFAULT_MAX_CELL_CHARS = 120;

function cell(value: unknown, maxChars: number): string {
  if (value === null || value === undefined) return "NULL";
  let text: string;
  if (typeof value === "number") {
    // Enough precision for ratios and money, without float noise such as 0.30000000000000004.
    text = Number.isInteger(value) ? String(value) : String(Number(value.toFixed(4)));
  } else {
    text = String(value);
  }
  text = text.replace(/\s+/g, " ").replace(/\|/g, "\\|");
  return text.length > maxChars ? `${text.slice(0, maxChars - 1)}…` : text;
}

/**
 * A compact pipe table for the model: a header line with the row count and whether (and by which
 * limit) rows were cut off, the column names, then one line per row. No padding: alignment costs tokens.
 */
export function formatResultTable(result: QueryResult, maxRows: number, maxCellChars = DEFAULT_MAX_CELL_CHARS): string {
  const count = result.rows.length;
  const rows = `${count} row${count === 1 ? "" : "s"}`;
  const header =
    result.truncated === "rows"
      ? `${rows} (truncated: more rows exist beyond the ${maxRows}-row limit; aggregate or filter to see them)`
      : result.truncated === "bytes"
        ? `${rows} (truncated: more rows exist beyond the result size limit; select fewer or shorter columns, or aggregate)`
        : `${rows} (truncated: no)`;
  const lines = [header, result.columns.map((c) => cell(c, maxCellChars)).join(" | ")];
  for (const row of result.rows) lines.push(row.map((v) => cell(v, maxCellChars)).join(" | "));
  return lines.join("\n");
}
