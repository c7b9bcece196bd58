import type { Caller } from "../../auth/principal.js";
import { ToolError } from "../../errors.js";

/** Limits applied to one query. */
export interface QueryLimits {
  maxRows: number;
  /**
   * Most bytes of values a result holds (text and blobs by their length, other values as 8);
   * rows past it are cut off as rows past `maxRows` are. Unset: rows alone limit the result.
   */
  maxBytes?: number;
  timeoutMs: number;
  signal?: AbortSignal;
  /**
   * The same for every attempt of one tool call (conversation, turn and tool call id): an engine
   * that can (Athena) reuses the query an earlier attempt started rather than starting another.
   */
  requestKey?: string;
  /** Who asks: an engine that scopes data per caller (a row policy, an assumed role) reads it from here, and refuses without it. */
  caller?: Caller;
}

/** Bytes a value counts for against `QueryLimits.maxBytes`: text by its UTF-8 length, any other value (or none) as 8. */
export function valueBytes(value: unknown): number {
  return typeof value === "string" ? Buffer.byteLength(value, "utf8") : 8;
}

/** Rows as arrays, in column order; `truncated` names the limit that cut rows off, if one did. */
export interface QueryResult {
  columns: string[];
  rows: unknown[][];
  truncated: false | "rows" | "bytes";
  /** What the caller's access left out, said to the model above the table (e.g. rows limited to some regions). Default: nothing left out. */
  notice?: string;
}

/** A read-only SQL engine behind `sql_query`. Failures are `ToolError`s the model can act on. */
export interface QueryEngine {
  /** Dialect named to the model in the tool description ("SQLite", "Trino SQL (Amazon Athena)"). */
  readonly dialect: "sqlite" | "athena";
  /** Tables and columns, as told to the model. */
  readonly schemaDescription: string;
  query(sql: string, limits: QueryLimits): Promise<QueryResult>;
  close(): Promise<void>;
}

/** The error of a query stopped at its time limit, with what the model can do about it. */
export const queryTimedOut = (timeoutMs: number) =>
  new ToolError(`the query ran longer than ${timeoutMs} ms and was stopped; aggregate more, filter to a shorter period, or add LIMIT`, "sql_query");

/** The error of a query stopped because its caller gave up. */
export const queryCancelled = () => new ToolError("the query was cancelled", "sql_query");
