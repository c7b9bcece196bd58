import { createHash } from "node:crypto";
import type { AthenaClient, AthenaClientConfig, ColumnInfo, QueryExecution } from "@aws-sdk/client-athena";
import type { Caller } from "../../auth/principal.js";
import { ToolError } from "../../errors.js";
import { queryCancelled, queryTimedOut, valueBytes, type QueryEngine, type QueryLimits, type QueryResult } from "./query-engine.js";

/** First wait between status polls; it grows by half each time up to the maximum. */
export const DEFAULT_ATHENA_POLL_MS = 200;
/** Longest wait between status polls. */
export const DEFAULT_ATHENA_MAX_POLL_MS = 2_000;
/** Stopped queries of earlier attempts a retried call starts afresh before it reports the stop. */
export const DEFAULT_ATHENA_MAX_RESTARTS = 5;
/** Longest wait for `StopQueryExecution` once a query's caller has given up. */
const STOP_TIMEOUT_MS = 5_000;

/**
 * The Athena SDK is loaded on the first query, not at start-up: a container whose turns never
 * query Athena does not pay for loading it (it is part of every cold start otherwise).
 */
let athenaSdk: Promise<typeof import("@aws-sdk/client-athena")> | undefined;
const loadAthenaSdk = () => (athenaSdk ??= import("@aws-sdk/client-athena"));
let credentialProviders: Promise<typeof import("@aws-sdk/credential-providers")> | undefined;
const loadCredentialProviders = () => (credentialProviders ??= import("@aws-sdk/credential-providers"));

/** Per-user Athena clients kept (each holds its assumed role's credentials); the oldest is dropped past this. */
export const DEFAULT_ATHENA_SESSION_CLIENTS = 256;
/** Lifetime of an assumed role's credentials, in seconds (STS's minimum; they are renewed as they expire). */
export const DEFAULT_ATHENA_SESSION_SECONDS = 900;

/** Which IAM role (and workgroup) a caller's queries run under: the first rule naming one of their roles, or `*`. */
export interface AthenaAccessRule {
  /** A role of the caller, or `*` for every caller. */
  role: string;
  roleArn: string;
  /** Default: the engine's `workgroup`. */
  workgroup?: string;
}

export interface AthenaAccessOptions {
  rules: readonly AthenaAccessRule[];
  /** The configuration of the Athena clients made per session, besides credentials. Default: the engine's region. */
  clientConfig?: AthenaClientConfig;
  /** The STS client's configuration (region, endpoint, the function's own credentials). Default: the engine's region and the default chain. */
  stsClientConfig?: Record<string, unknown>;
}

/** A session tag value: letters, digits, spaces and `_.:/=+-@` only, at most 256 characters. */
const tagValue = (value: string) => value.replace(/[^\p{L}\p{Z}\p{N}_.:/=+\-@]/gu, "_").slice(0, 256);

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
  /**
   * Queries run under an IAM role assumed per caller (`ATHENA_ACCESS`), tagged with who asks, so the
   * role's grants (Lake Formation data filters, the workgroup's IAM conditions) decide what they read.
   * A caller no rule names is refused. Default: every query runs under the function's own role.
   */
  access?: AthenaAccessOptions;
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

/**
 * The idempotency token (`ClientRequestToken`, 32 to 128 characters) of a query: the same for
 * every attempt of one tool call and statement, so Athena answers a retry with the query the
 * first attempt started, running or finished, instead of starting another.
 */
const requestToken = (...parts: (string | undefined)[]) => createHash("sha256").update(JSON.stringify(parts)).digest("hex");

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });

/**
 * Amazon Athena behind `sql_query`: start the query, poll its state, and page through results only
 * up to the row and byte limits. A query whose caller gives up (the time limit, or the caller's
 * signal, as when the API hands a long turn to the worker) is stopped with `StopQueryExecution`.
 * Given a `requestKey`, a retried call reuses the query an earlier attempt started; one that the
 * earlier attempt stopped is started again under the next token in a chain every retry derives
 * alike. Reads are enforced by `checkReadOnlySql` before the query gets here, and should also be
 * by the workgroup's IAM role.
 */
export class AthenaQueryEngine implements QueryEngine {
  readonly dialect = "athena" as const;
  readonly schemaDescription: string;
  readonly #o: AthenaQueryEngineOptions;
  #client: AthenaClient | undefined;
  /** Per-session clients by role, workgroup and principal, oldest first. */
  readonly #sessions = new Map<string, AthenaClient>();

  constructor(options: AthenaQueryEngineOptions) {
    this.#o = options;
    this.#client = options.client;
    this.schemaDescription = options.schemaDescription;
  }

  async query(sql: string, limits: QueryLimits): Promise<QueryResult> {
    const o = this.#o;
    const deadline = Date.now() + limits.timeoutMs;
    const sdk = await loadAthenaSdk();
    const { client, workgroup } = await this.#clientFor(sdk, limits.caller);
    const status = async (id: string): Promise<QueryExecution | undefined> => {
      if (limits.signal?.aborted) throw queryCancelled();
      try {
        return (await client.send(new sdk.GetQueryExecutionCommand({ QueryExecutionId: id }), { abortSignal: limits.signal })).QueryExecution;
      } catch (error) {
        throw limits.signal?.aborted ? queryCancelled() : error;
      }
    };

    let token = limits.requestKey === undefined ? undefined : requestToken(limits.requestKey, sql, workgroup, o.database, o.catalog, o.outputLocation);
    for (let restarts = 0; ; restarts++) {
      // Not given the caller's signal: a start cut short could leave a query running whose id we never learn.
      const started = await client.send(
        new sdk.StartQueryExecutionCommand({
          QueryString: sql,
          WorkGroup: workgroup,
          QueryExecutionContext: { Database: o.database, Catalog: o.catalog },
          ...(o.outputLocation && { ResultConfiguration: { OutputLocation: o.outputLocation } }),
          ClientRequestToken: token,
        }),
      );
      const id = started.QueryExecutionId;
      if (!id) throw new ToolError("Athena did not start the query", "sql_query");
      let finished = false;
      try {
        let execution = await status(id);
        // Cancelled before we polled it: the query of an earlier attempt, stopped when that attempt's caller gave up.
        const stoppedEarlier = token !== undefined && execution?.Status?.State === "CANCELLED";
        let wait = o.pollMs ?? DEFAULT_ATHENA_POLL_MS;
        for (;;) {
          const state = execution?.Status?.State;
          if (state === "SUCCEEDED" || state === "FAILED" || state === "CANCELLED") {
            finished = true;
            break;
          }
          if (Date.now() + wait > deadline) throw queryTimedOut(limits.timeoutMs);
          await sleep(wait, limits.signal);
          execution = await status(id);
          wait = Math.min(Math.ceil(wait * 1.5), DEFAULT_ATHENA_MAX_POLL_MS);
        }
        const state = execution?.Status?.State;
        if (state === "SUCCEEDED") return await this.#results(client, sdk, id, limits);
        if (stoppedEarlier && restarts < DEFAULT_ATHENA_MAX_RESTARTS) {
          // Every attempt derives the same next token, so concurrent retries still share one query.
          token = requestToken(token, id);
          continue;
        }
        const reason = execution?.Status?.StateChangeReason ?? execution?.Status?.AthenaError?.ErrorMessage;
        throw new ToolError(`Athena query ${state!.toLowerCase()}: ${reason ?? "no reason given"}`, "sql_query");
      } finally {
        if (!finished) await this.#stop(client, sdk, id);
      }
    }
  }

  async close(): Promise<void> {
    // A given client belongs to the composition root; the per-session ones are made here.
    for (const client of this.#sessions.values()) client.destroy();
    this.#sessions.clear();
  }

  /** The client (and workgroup) a caller's query runs with: the function's own, or one under the role assumed for this caller. */
  async #clientFor(sdk: typeof import("@aws-sdk/client-athena"), caller: Caller | undefined): Promise<{ client: AthenaClient; workgroup: string }> {
    const o = this.#o;
    if (!o.access) return { client: (this.#client ??= new sdk.AthenaClient({ region: o.region })), workgroup: o.workgroup };
    if (!caller) throw new ToolError("refused: Athena is queried as the asking user, and this query names none", "sql_query");
    const rule = o.access.rules.find((r) => r.role === "*" || caller.roles.includes(r.role));
    if (!rule) throw new ToolError("refused: your roles give you no access to the Athena data (ATHENA_ACCESS); ask an administrator for access", "sql_query");
    const workgroup = rule.workgroup ?? o.workgroup;
    const { issuer, tenant, subject } = caller.principal;
    const key = JSON.stringify([rule.roleArn, workgroup, issuer, tenant, subject]);
    let client = this.#sessions.get(key);
    if (!client) {
      const { fromTemporaryCredentials } = await loadCredentialProviders();
      const who = createHash("sha256")
        .update(JSON.stringify([issuer, tenant, subject]))
        .digest("hex")
        .slice(0, 32);
      const credentials = fromTemporaryCredentials({
        params: {
          RoleArn: rule.roleArn,
          RoleSessionName: `threadwise-${who}`,
          DurationSeconds: DEFAULT_ATHENA_SESSION_SECONDS,
          Tags: [
            { Key: "threadwise-tenant", Value: tagValue(`${issuer}:${tenant ?? "-"}`) },
            { Key: "threadwise-role", Value: tagValue(rule.role === "*" ? "any" : rule.role) },
            { Key: "threadwise-user", Value: who },
          ],
        },
        clientConfig: { region: o.region, ...o.access.stsClientConfig },
      });
      client = new sdk.AthenaClient({ region: o.region, ...o.access.clientConfig, credentials });
      this.#sessions.set(key, client);
      if (this.#sessions.size > DEFAULT_ATHENA_SESSION_CLIENTS) {
        const [oldest, dropped] = this.#sessions.entries().next().value!;
        this.#sessions.delete(oldest);
        dropped.destroy();
      }
    }
    return { client, workgroup };
  }

  async #stop(client: AthenaClient, sdk: typeof import("@aws-sdk/client-athena"), id: string): Promise<void> {
    // Best effort: if Athena cannot be reached, the workgroup's own time limit ends the query.
    await client
      .send(new sdk.StopQueryExecutionCommand({ QueryExecutionId: id }), { abortSignal: AbortSignal.timeout(STOP_TIMEOUT_MS) })
      .catch(() => undefined);
  }

  async #results(client: AthenaClient, sdk: typeof import("@aws-sdk/client-athena"), id: string, limits: QueryLimits): Promise<QueryResult> {
    let columns: ColumnInfo[] | undefined;
    const rows: unknown[][] = [];
    let truncated: QueryResult["truncated"] = false;
    let bytes = 0;
    let header = true;
    let nextToken: string | undefined;
    pages: do {
      const page = await client.send(
        new sdk.GetQueryResultsCommand({ QueryExecutionId: id, NextToken: nextToken, MaxResults: Math.min(1_000, limits.maxRows + 2) }),
        { abortSignal: limits.signal },
      );
      columns ??= page.ResultSet?.ResultSetMetadata?.ColumnInfo ?? [];
      for (const row of page.ResultSet?.Rows ?? []) {
        // The first row of a SELECT's first page repeats the column names.
        if (header) {
          header = false;
          continue;
        }
        if (rows.length === limits.maxRows) {
          truncated = "rows";
          break pages;
        }
        const values = (row.Data ?? []).map((d) => d.VarCharValue);
        bytes += values.reduce((sum, v) => sum + valueBytes(v), 0);
        if (limits.maxBytes !== undefined && bytes > limits.maxBytes) {
          truncated = "bytes";
          break pages;
        }
        rows.push(values.map((v, i) => typed(v, columns?.[i])));
      }
      nextToken = page.NextToken;
      // A full result with more pages behind it is cut off without fetching them.
      if (nextToken && rows.length === limits.maxRows) truncated = "rows";
    } while (nextToken && !truncated);
    return { columns: (columns ?? []).map((c) => c.Name ?? ""), rows, truncated };
  }
}
