import { randomUUID } from "node:crypto";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Database } from "@sqlite.org/sqlite-wasm";
import { restrictToRegions } from "../../../lib/tools/sql/sales-dataset.js";
import { openDatabaseImage } from "../../../lib/tools/sql/sqlite-wasm.js";
import type { AssumedSession } from "../../support/sts-endpoint.js";

/**
 * Lake Formation as the stand-in applies it: every request must be signed with credentials of an
 * assumed session, and a session's queries read only the regions its role's data filter grants.
 */
export interface AthenaLakeFormation {
  /** The session an access key was issued for (`StsEndpoint.sessionOf`). */
  sessionOf(accessKeyId: string): AssumedSession | undefined;
  /** Regions each role's data filter grants; a role not listed reads nothing. */
  rowFilters: Record<string, readonly string[]>;
}

export interface AthenaEndpoint {
  url: string;
  /** Every API call received, by operation name (StartQueryExecution, ...), with the access key that signed it. */
  calls: { operation: string; body: Record<string, unknown>; accessKeyId?: string }[];
  /** Ids of the query executions created, in order (a start answered from its token creates none). */
  created: string[];
  /** Resolves when the next call of this operation has been answered. */
  nextCall(operation: string): Promise<void>;
  /** Lets queries mentioning `held_query` finish: until then they stay RUNNING. */
  release(): void;
  close(): Promise<void>;
}

interface Execution {
  sql: string;
  /** The data the query reads: the whole image, or what its session's role may read. */
  db: Database;
  /** The parameters a start with the same ClientRequestToken must repeat. */
  request: string;
  polls: number;
  state: "QUEUED" | "RUNNING" | "SUCCEEDED" | "FAILED" | "CANCELLED";
  reason?: string;
  columns: { name: string; type: string }[];
  rows: (string | null)[][];
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/x-amz-json-1.1" });
  res.end(JSON.stringify(body));
}

/**
 * A local Amazon Athena speaking its JSON 1.1 protocol (`X-Amz-Target: AmazonAthena.<Operation>`).
 * Queries run against the given SQLite image; an execution reports RUNNING on its first poll and
 * then its outcome, a query mentioning `sleep_forever` runs until stopped, one mentioning
 * `held_query` until `release()`, and results page with NextToken, the first row of the first page
 * holding the column names as Athena's does. A start repeating a ClientRequestToken is answered
 * with that token's execution, whatever its state, and refused if its parameters differ, as
 * Athena documents for the token.
 */
export async function startAthenaEndpoint(image: Uint8Array, lakeFormation?: AthenaLakeFormation): Promise<AthenaEndpoint> {
  const db = await openDatabaseImage(image);
  const filtered = new Map<string, Promise<Database>>();
  const dataOf = (roleArn: string) => {
    let data = filtered.get(roleArn);
    if (!data) {
      data = restrictToRegions(image, lakeFormation?.rowFilters[roleArn] ?? []).then(openDatabaseImage);
      filtered.set(roleArn, data);
    }
    return data;
  };
  const executions = new Map<string, Execution>();
  const byToken = new Map<string, string>();
  const calls: AthenaEndpoint["calls"] = [];
  const created: string[] = [];
  const waiting: { operation: string; resolve: () => void }[] = [];
  let released = false;
  const running = (e: Execution) => e.sql.includes("sleep_forever") || (e.sql.includes("held_query") && !released);
  /** Runs the query the moment its execution finishes, as Athena's result reflects the data then. */
  const evaluate = (execution: Execution) => {
    try {
      const columnNames: string[] = [];
      const rows = execution.db.exec({ sql: execution.sql, rowMode: "array", returnValue: "resultRows", columnNames }) as unknown[][];
      execution.columns = columnNames.map((name, i) => ({
        name,
        type: rows.length > 0 && typeof rows[0]![i] === "number" ? (Number.isInteger(rows[0]![i]) ? "bigint" : "double") : "varchar",
      }));
      execution.rows = rows.map((r) => r.map((v) => (v === null ? null : String(v))));
    } catch (error) {
      execution.reason = `SYNTAX_ERROR: line 1:1: ${(error as Error).message}`;
    }
  };

  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}") as Record<string, unknown>;
    const operation = String(req.headers["x-amz-target"] ?? "").replace(/^AmazonAthena\./, "");
    const accessKeyId = /Credential=([^/]+)\//.exec(req.headers.authorization ?? "")?.[1];
    calls.push({ operation, body, ...(lakeFormation && { accessKeyId }) });
    const session = accessKeyId ? lakeFormation?.sessionOf(accessKeyId) : undefined;
    if (lakeFormation && !session) {
      return send(res, 400, {
        __type: "AccessDeniedException",
        Message: "queries of this catalog run under a role assumed for the asking user; the caller's own credentials are not granted",
      });
    }
    res.once("finish", () => {
      for (const w of waiting.filter((w) => w.operation === operation)) {
        waiting.splice(waiting.indexOf(w), 1);
        w.resolve();
      }
    });

    if (operation === "StartQueryExecution") {
      if (!body.WorkGroup) return send(res, 400, { __type: "InvalidRequestException", Message: "WorkGroup is required" });
      const { ClientRequestToken: token, ...params } = body;
      const request = JSON.stringify(params);
      const earlier = typeof token === "string" ? byToken.get(token) : undefined;
      if (earlier) {
        if (executions.get(earlier)!.request !== request) {
          return send(res, 400, { __type: "InvalidRequestException", Message: "Idempotent parameters do not match" });
        }
        return send(res, 200, { QueryExecutionId: earlier });
      }
      const id = randomUUID();
      const data = session ? await dataOf(session.roleArn) : db;
      const execution: Execution = { sql: String(body.QueryString), db: data, request, polls: 0, state: "QUEUED", columns: [], rows: [] };
      executions.set(id, execution);
      created.push(id);
      if (typeof token === "string") byToken.set(token, id);
      return send(res, 200, { QueryExecutionId: id });
    }

    const execution = executions.get(String(body.QueryExecutionId));
    if (!execution) return send(res, 400, { __type: "InvalidRequestException", Message: "QueryExecution not found" });

    if (operation === "GetQueryExecution") {
      execution.polls++;
      if (execution.state === "QUEUED" || execution.state === "RUNNING") {
        if (running(execution) || execution.polls < 2) {
          execution.state = "RUNNING";
        } else {
          evaluate(execution);
          execution.state = execution.reason ? "FAILED" : "SUCCEEDED";
        }
      }
      return send(res, 200, {
        QueryExecution: {
          QueryExecutionId: body.QueryExecutionId,
          Query: execution.sql,
          Status: { State: execution.state, ...(execution.state === "FAILED" && { StateChangeReason: execution.reason }) },
        },
      });
    }

    if (operation === "StopQueryExecution") {
      // Stopping a finished query changes nothing, as in Athena.
      if (execution.state === "QUEUED" || execution.state === "RUNNING") execution.state = "CANCELLED";
      return send(res, 200, {});
    }

    if (operation === "GetQueryResults") {
      if (execution.state !== "SUCCEEDED") {
        return send(res, 400, { __type: "InvalidRequestException", Message: `Query has not yet finished. Current state: ${execution.state}` });
      }
      const max = Number(body.MaxResults ?? 1000);
      const offset = body.NextToken ? Number(body.NextToken) : 0;
      const all = [execution.columns.map((c) => c.name), ...execution.rows];
      const page = all.slice(offset, offset + max);
      const next = offset + max < all.length ? String(offset + max) : undefined;
      return send(res, 200, {
        ResultSet: {
          Rows: page.map((r) => ({ Data: r.map((v) => (v === null ? {} : { VarCharValue: v })) })),
          ResultSetMetadata: {
            ColumnInfo: execution.columns.map((c) => ({ CatalogName: "hive", Name: c.name, Label: c.name, Type: c.type, Nullable: "UNKNOWN" })),
          },
        },
        ...(next && { NextToken: next }),
      });
    }
    send(res, 400, { __type: "UnknownOperationException", Message: operation });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    created,
    nextCall: (operation) => new Promise<void>((resolve) => waiting.push({ operation, resolve })),
    release: () => {
      released = true;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        db.close();
        for (const data of filtered.values()) void data.then((d) => d.close());
        server.closeAllConnections();
        server.close((e) => (e ? reject(e) : resolve()));
      }),
  };
}
