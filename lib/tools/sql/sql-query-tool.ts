import { z } from "zod";
import { DEFAULT_SQL_MAX_RESULT_BYTES, DEFAULT_SQL_MAX_ROWS, DEFAULT_SQL_TIMEOUT_MS } from "../../config/tools-config.js";
import { ToolError } from "../../errors.js";
import type { ToolContext, ToolDefinition } from "../tool.js";
import type { QueryEngine } from "./query-engine.js";
import { checkReadOnlySql } from "./read-only-sql.js";
import { formatResultTable } from "./result-table.js";

export interface SqlQueryToolOptions {
  engine: QueryEngine;
  /** Default: `DEFAULT_SQL_MAX_ROWS`. */
  maxRows?: number;
  /** Default: `DEFAULT_SQL_MAX_RESULT_BYTES`. */
  maxBytes?: number;
  /** Default: `DEFAULT_SQL_TIMEOUT_MS`. */
  timeoutMs?: number;
}

const schema = z.object({
  sql: z.string().min(1).max(20_000).describe("One read-only SELECT (or WITH ... SELECT) statement"),
});

const DIALECT_NAMES = { sqlite: "SQLite", athena: "Trino SQL (Amazon Athena)" } as const;

/** `sql_query`: one read-only query, limited in rows, bytes and time, answered as a compact table. */
export function createSqlQueryTool(options: SqlQueryToolOptions): ToolDefinition<typeof schema> {
  const maxRows = options.maxRows ?? DEFAULT_SQL_MAX_ROWS;
  const maxBytes = options.maxBytes ?? DEFAULT_SQL_MAX_RESULT_BYTES;
  const timeoutMs = options.timeoutMs ?? DEFAULT_SQL_TIMEOUT_MS;
  const { engine } = options;
  return {
    name: "sql_query",
    description:
      `Run one read-only ${DIALECT_NAMES[engine.dialect]} query against the sales database and get a table ` +
      `(at most ${maxRows} rows; aggregate rather than list). Tables:\n${engine.schemaDescription}`,
    schema,
    sideEffects: false,
    // Its text comes from outside the conversation (or repeats what such a tool returned): it may carry instructions.
    trust: "untrusted",
    async run(input: z.infer<typeof schema>, ctx: ToolContext): Promise<string> {
      const check = checkReadOnlySql(input.sql, engine.dialect);
      if (!check.ok) throw new ToolError(`query refused: ${check.reason}`, "sql_query");
      // Every attempt of this tool call (a retry, the worker resuming a handed-off turn) carries the same key.
      const requestKey = `${ctx.conversationId}:${ctx.turnId}:${ctx.toolCallId}`;
      const result = await engine.query(check.statement, { maxRows, maxBytes, timeoutMs, signal: ctx.signal, requestKey, caller: ctx.caller });
      const table = formatResultTable(result, maxRows);
      return result.notice ? `${result.notice}\n${table}` : table;
    },
  };
}
