import { spawn, type ChildProcess } from "node:child_process";
import { createRequire } from "node:module";
import { ToolError } from "../../errors.js";
import type { QueryEngine, QueryLimits, QueryResult } from "./query-engine.js";

/** Idle query processes kept for the next query; more run only while queries overlap. */
export const DEFAULT_SQLITE_IDLE_PROCESSES = 1;

/**
 * The query process runs plain JavaScript given with `node -e`, so it is the same under tsx,
 * vitest and an esbuild bundle. It opens the database image read-only and refuses any statement
 * that SQLite does not itself classify as a read-only query returning rows
 * (`stmt.readonly && stmt.reader`), whatever the text looks like.
 */
const QUERY_PROCESS_SOURCE = `
const Database = require(process.env.THREADWISE_SQLITE_MODULE);
let db;
const cell = (v) => (v instanceof Uint8Array ? "<blob " + v.length + " bytes>" : typeof v === "bigint" ? v.toString() : v);
process.on("message", (message) => {
  if (message.image) {
    const u8 = message.image;
    db = new Database(Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength), { readonly: true });
    return;
  }
  const { sql, maxRows } = message;
  try {
    const stmt = db.prepare(sql);
    if (!stmt.readonly) return process.send({ ok: false, kind: "not_read_only" });
    if (!stmt.reader) return process.send({ ok: false, kind: "no_rows" });
    stmt.raw(true);
    const columns = stmt.columns().map((c) => c.name);
    const rows = [];
    let truncated = false;
    for (const row of stmt.iterate()) {
      if (rows.length === maxRows) { truncated = true; break; }
      rows.push(row.map(cell));
    }
    process.send({ ok: true, columns, rows, truncated });
  } catch (error) {
    process.send({ ok: false, kind: "sql_error", message: String((error && error.message) || error) });
  }
});
process.on("disconnect", () => process.exit(0));
`;

type QueryProcessReply =
  | { ok: true; columns: string[]; rows: unknown[][]; truncated: boolean }
  | { ok: false; kind: "not_read_only" | "no_rows" | "sql_error"; message?: string };

export interface SqliteQueryEngineOptions {
  /** Serialized database (from `buildSalesDatabase`), opened read-only by every query process. */
  image: Buffer;
  schemaDescription: string;
  /** Default: `DEFAULT_SQLITE_IDLE_PROCESSES`. */
  idleProcesses?: number;
}

/**
 * Read-only SQLite in child processes. better-sqlite3 is synchronous and cannot be interrupted,
 * and a worker thread stuck in SQLite's native loop ignores `terminate()`; so each query runs in
 * a process that is killed when the time limit passes, and the next query gets a fresh one. The
 * connection is opened read-only, so even a statement that slipped past every check could not write.
 */
export class SqliteQueryEngine implements QueryEngine {
  readonly dialect = "sqlite" as const;
  readonly schemaDescription: string;
  readonly #image: Buffer;
  readonly #modulePath: string;
  readonly #idle: ChildProcess[] = [];
  readonly #busy = new Set<ChildProcess>();
  readonly #maxIdle: number;
  #closed = false;

  constructor(options: SqliteQueryEngineOptions) {
    this.#image = options.image;
    this.schemaDescription = options.schemaDescription;
    this.#maxIdle = options.idleProcesses ?? DEFAULT_SQLITE_IDLE_PROCESSES;
    this.#modulePath = createRequire(import.meta.url).resolve("better-sqlite3");
  }

  async query(sql: string, limits: QueryLimits): Promise<QueryResult> {
    if (this.#closed) throw new Error("SqliteQueryEngine is closed");
    const child = this.#idle.pop() ?? this.#spawn();
    this.#busy.add(child);
    let reply: QueryProcessReply;
    try {
      reply = await this.#ask(child, sql, limits);
    } catch (error) {
      this.#busy.delete(child);
      child.kill("SIGKILL");
      throw error;
    }
    this.#busy.delete(child);
    if (!this.#closed && this.#idle.length < this.#maxIdle) this.#idle.push(child);
    else child.kill("SIGKILL");

    if (reply.ok) return { columns: reply.columns, rows: reply.rows, truncated: reply.truncated };
    if (reply.kind === "not_read_only") {
      throw new ToolError("only read-only queries are allowed: SQLite classifies this statement as a write", "sql_query");
    }
    if (reply.kind === "no_rows") {
      throw new ToolError("only queries that return rows (SELECT, WITH ... SELECT) are allowed", "sql_query");
    }
    throw new ToolError(`SQLite error: ${reply.message ?? "unknown"}`, "sql_query");
  }

  async close(): Promise<void> {
    this.#closed = true;
    const all = [...this.#idle, ...this.#busy];
    this.#idle.length = 0;
    this.#busy.clear();
    for (const w of all) w.kill("SIGKILL");
  }

  #spawn(): ChildProcess {
    const child = spawn(process.execPath, ["-e", QUERY_PROCESS_SOURCE], {
      stdio: ["ignore", "ignore", "inherit", "ipc"],
      serialization: "advanced",
      env: { THREADWISE_SQLITE_MODULE: this.#modulePath },
    });
    child.send({ image: this.#image });
    // A process that dies while idle must not be handed the next query.
    child.once("exit", () => {
      const at = this.#idle.indexOf(child);
      if (at >= 0) this.#idle.splice(at, 1);
    });
    // An idle query process must not keep ours alive.
    child.unref();
    child.channel?.unref();
    return child;
  }

  #ask(child: ChildProcess, sql: string, limits: QueryLimits): Promise<QueryProcessReply> {
    return new Promise<QueryProcessReply>((resolve, reject) => {
      const cleanup = () => {
        clearTimeout(timer);
        child.off("message", onMessage);
        child.off("error", onError);
        child.off("exit", onExit);
        limits.signal?.removeEventListener("abort", onAbort);
      };
      const onMessage = (reply: QueryProcessReply) => {
        cleanup();
        resolve(reply);
      };
      const onError = (error: Error) => {
        cleanup();
        reject(new ToolError("the query engine failed; try again", "sql_query", { cause: error }));
      };
      const onExit = () => {
        cleanup();
        reject(new ToolError("the query engine stopped unexpectedly; try again", "sql_query"));
      };
      const onAbort = () => {
        cleanup();
        reject(new ToolError("the query was cancelled", "sql_query"));
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(
          new ToolError(
            `the query ran longer than ${limits.timeoutMs} ms and was stopped; aggregate more, filter to a shorter period, or add LIMIT`,
            "sql_query",
          ),
        );
      }, limits.timeoutMs);
      child.on("message", onMessage);
      child.on("error", onError);
      child.on("exit", onExit);
      limits.signal?.addEventListener("abort", onAbort, { once: true });
      child.send({ sql, maxRows: limits.maxRows });
    });
  }
}
