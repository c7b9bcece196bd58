import { randomUUID } from "node:crypto";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import Database from "better-sqlite3";

export interface AthenaEndpoint {
  url: string;
  /** Every API call received, by operation name (StartQueryExecution, ...). */
  calls: { operation: string; body: Record<string, unknown> }[];
  close(): Promise<void>;
}

interface Execution {
  sql: string;
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
 * then its outcome, a query mentioning `sleep_forever` runs until stopped, and results page with
 * NextToken, the first row of the first page holding the column names as Athena's does.
 */
export async function startAthenaEndpoint(image: Buffer): Promise<AthenaEndpoint> {
  const db = new Database(image, { readonly: true });
  const executions = new Map<string, Execution>();
  const calls: AthenaEndpoint["calls"] = [];

  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}") as Record<string, unknown>;
    const operation = String(req.headers["x-amz-target"] ?? "").replace(/^AmazonAthena\./, "");
    calls.push({ operation, body });

    if (operation === "StartQueryExecution") {
      if (!body.WorkGroup) return send(res, 400, { __type: "InvalidRequestException", Message: "WorkGroup is required" });
      const id = randomUUID();
      const execution: Execution = { sql: String(body.QueryString), polls: 0, state: "QUEUED", columns: [], rows: [] };
      if (!execution.sql.includes("sleep_forever")) {
        try {
          const stmt = db.prepare(execution.sql).raw(true);
          const cols = stmt.columns();
          const rows = stmt.all() as unknown[][];
          execution.columns = cols.map((c, i) => ({
            name: c.name,
            type: rows.length > 0 && typeof rows[0]![i] === "number" ? (Number.isInteger(rows[0]![i]) ? "bigint" : "double") : "varchar",
          }));
          execution.rows = rows.map((r) => r.map((v) => (v === null ? null : String(v))));
        } catch (error) {
          execution.reason = `SYNTAX_ERROR: line 1:1: ${(error as Error).message}`;
        }
      }
      executions.set(id, execution);
      return send(res, 200, { QueryExecutionId: id });
    }

    const execution = executions.get(String(body.QueryExecutionId));
    if (!execution) return send(res, 400, { __type: "InvalidRequestException", Message: "QueryExecution not found" });

    if (operation === "GetQueryExecution") {
      execution.polls++;
      if (execution.state !== "CANCELLED" && !execution.sql.includes("sleep_forever")) {
        execution.state = execution.polls < 2 ? "RUNNING" : execution.reason ? "FAILED" : "SUCCEEDED";
      } else if (execution.state === "QUEUED") {
        execution.state = "RUNNING";
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
      execution.state = "CANCELLED";
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
    close: () =>
      new Promise<void>((resolve, reject) => {
        db.close();
        server.closeAllConnections();
        server.close((e) => (e ? reject(e) : resolve()));
      }),
  };
}
