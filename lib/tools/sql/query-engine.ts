/** Limits applied to one query. */
export interface QueryLimits {
  maxRows: number;
  timeoutMs: number;
  signal?: AbortSignal;
}

/** Rows as arrays, in column order; `truncated` says more rows existed than `maxRows`. */
export interface QueryResult {
  columns: string[];
  rows: unknown[][];
  truncated: boolean;
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
