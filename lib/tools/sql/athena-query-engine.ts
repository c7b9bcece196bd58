import type { AthenaClient, ColumnInfo } from "@aws-sdk/client-athena";
import { ToolError } from "../../errors.js";
import type { QueryEngine, QueryLimits, QueryResult } from "./query-engine.js";

/** First wait between status polls; it grows by half each time up to the maximum. */
export const DEFAULT_ATHENA_POLL_MS = 200;
/** Longest wait between status polls. */
export const DEFAULT_ATHENA_MAX_POLL_MS = 2_000;

/**
 * The Athena SDK is loaded on the first query, not at start-up: a container whose turns never
 * query Athena does not pay for loading it (it is part of every cold start otherwise).
 */
let athenaSdk: Promise<typeof import("@aws-sdk/client-athena")> | undefined;
const loadAthenaSdk = () => (athenaSdk ??= import("@aws-sdk/client-athena"));

export interface AthenaQueryEngineOptions {
  /** Default: one client, created on the first query in `region`. */
  client?: AthenaClient;
  /** Region of the client created on the first query. */
  region?: string;
  workgroup: string;
  database: string;
  catalog: string;
  /** Unset: the workgroup's configured result location is used. */
  outputLocation?: string;
  schemaDescription: string;
  /** Default: `DEFAULT_ATHENA_POLL_MS`. */
  pollMs?: number;
}

const NUMERIC = new Set(["tinyint", "smallint", "integer", "int", "bigint", "double", "float", "real", "decimal"]);

function typed(value: string | undefined, column: ColumnInfo | undefined): unknown {
  if (value === undefined) return null;
  const type = (column?.Type ?? "varchar").toLowerCase().replace(/\(.*$/, "");
  if (NUMERIC.has(type)) {
    const n = Number(value);
    return Number.isFinite(n) ? n : value;
  }
  return value;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
  });

/**
 * Amazon Athena behind `sql_query`: start the query, poll its state, stop it when the time limit
 * passes, and page through results only up to the row limit. Reads are enforced by
 * `checkReadOnlySql` before the query gets here, and should also be by the workgroup's IAM role.
 */
export class AthenaQueryEngine implements QueryEngine {
  readonly dialect = "athena" as const;
  readonly schemaDescription: string;
  readonly #o: AthenaQueryEngineOptions;
  #client: AthenaClient | undefined;

  constructor(options: AthenaQueryEngineOptions) {
    this.#o = options;
    this.#client = options.client;
    this.schemaDescription = options.schemaDescription;
  }

  async query(sql: string, limits: QueryLimits): Promise<QueryResult> {
    const o = this.#o;
    const deadline = Date.now() + limits.timeoutMs;
    const { AthenaClient, GetQueryExecutionCommand, GetQueryResultsCommand, StartQueryExecutionCommand, StopQueryExecutionCommand } =
      await loadAthenaSdk();
    const client = (this.#client ??= new AthenaClient({ region: o.region }));
    const started = await client.send(
      new StartQueryExecutionCommand({
        QueryString: sql,
        WorkGroup: o.workgroup,
        QueryExecutionContext: { Database: o.database, Catalog: o.catalog },
        ...(o.outputLocation && { ResultConfiguration: { OutputLocation: o.outputLocation } }),
      }),
      { abortSignal: limits.signal },
    );
    const id = started.QueryExecutionId;
    if (!id) throw new ToolError("Athena did not start the query", "sql_query");

    let wait = o.pollMs ?? DEFAULT_ATHENA_POLL_MS;
    for (;;) {
      const { QueryExecution } = await client.send(new GetQueryExecutionCommand({ QueryExecutionId: id }), {
        abortSignal: limits.signal,
      });
      const state = QueryExecution?.Status?.State;
      if (state === "SUCCEEDED") break;
      if (state === "FAILED" || state === "CANCELLED") {
        const reason = QueryExecution?.Status?.StateChangeReason ?? QueryExecution?.Status?.AthenaError?.ErrorMessage;
        throw new ToolError(`Athena query ${state.toLowerCase()}: ${reason ?? "no reason given"}`, "sql_query");
      }
      if (Date.now() + wait > deadline || limits.signal?.aborted) {
        await client.send(new StopQueryExecutionCommand({ QueryExecutionId: id })).catch(() => undefined);
        throw new ToolError(
          `the query ran longer than ${limits.timeoutMs} ms and was stopped; aggregate more, filter to a shorter period, or add LIMIT`,
          "sql_query",
        );
      }
      await sleep(wait, limits.signal);
      wait = Math.min(Math.ceil(wait * 1.5), DEFAULT_ATHENA_MAX_POLL_MS);
    }

    let columns: ColumnInfo[] | undefined;
    const rows: unknown[][] = [];
    let header = true;
    let nextToken: string | undefined;
    do {
      const page = await client.send(
        new GetQueryResultsCommand({ QueryExecutionId: id, NextToken: nextToken, MaxResults: Math.min(1_000, limits.maxRows + 2) }),
        { abortSignal: limits.signal },
      );
      columns ??= page.ResultSet?.ResultSetMetadata?.ColumnInfo ?? [];
      for (const row of page.ResultSet?.Rows ?? []) {
        // The first row of a SELECT's first page repeats the column names.
        if (header) {
          header = false;
          continue;
        }
        rows.push((row.Data ?? []).map((d, i) => typed(d.VarCharValue, columns?.[i])));
      }
      nextToken = page.NextToken;
    } while (nextToken && rows.length <= limits.maxRows);
    return {
      columns: (columns ?? []).map((c) => c.Name ?? ""),
      rows: rows.slice(0, limits.maxRows),
      truncated: rows.length > limits.maxRows || (nextToken !== undefined && rows.length >= limits.maxRows),
    };
  }

  async close(): Promise<void> {
    // A given client belongs to the composition root; one made here holds no connections to close.
  }
}
