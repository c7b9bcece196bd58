import { Worker } from "node:worker_threads";
import { ToolError } from "../../errors.js";
import { queryCancelled, queryTimedOut, type QueryEngine, type QueryLimits, type QueryResult } from "./query-engine.js";
import { sqliteModuleUrl } from "./sqlite-wasm.js";

/** Query workers running at once; further queries wait in the queue. */
export const DEFAULT_SQLITE_POOL_SIZE = 2;
/** Queries that may wait for a free worker; one more is refused as busy at once. */
export const DEFAULT_SQLITE_QUEUE_SIZE = 8;
/** Idle query workers kept for the next query; the others stop when their query ends. */
export const DEFAULT_SQLITE_IDLE_WORKERS = 1;
/** Longest string or blob a query may build (`SQLITE_LIMIT_LENGTH`): longer ones fail before they are made. */
export const DEFAULT_SQLITE_MAX_VALUE_BYTES = 1_000_000;
/** SQLite's memory in each query worker (`PRAGMA hard_heap_limit`), the database image included. */
export const DEFAULT_SQLITE_HEAP_BYTES = 64 * 2 ** 20;
/** Room in a worker's WebAssembly memory beyond SQLite's heap, for the runtime's own stack and data. */
const WASM_OVERHEAD_BYTES = 16 * 2 ** 20;
/** A query worker's JavaScript heap: holds at most one result, itself capped in bytes. */
const WORKER_RESOURCE_LIMITS = { maxOldGenerationSizeMb: 64, maxYoungGenerationSizeMb: 16 };
const WASM_PAGE_BYTES = 65_536;

/**
 * A query worker runs plain JavaScript given as source, so it is the same under tsx, vitest and
 * an esbuild bundle. It loads SQLite's WebAssembly build with a memory that cannot grow past its
 * maximum, opens the database image read-only, caps values (`SQLITE_LIMIT_LENGTH`) and SQLite's
 * heap (`hard_heap_limit`) inside the engine, allows no ATTACH, and runs a statement only if
 * SQLite's parser finds exactly one and classifies it as read-only (`sqlite3_stmt_readonly`)
 * and returning rows. Rows are read until `maxRows` or `maxBytes`, and a value is measured
 * before it is copied out of SQLite. Queries posted while it starts wait in its message queue.
 */
const QUERY_WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const { moduleUrl, image, heapBytes, memoryPages, maxValueBytes } = workerData;
globalThis.sqlite3ApiConfig = { debug() {}, log() {}, warn() {}, error() {} };
(async () => {
  const { default: init } = await import(moduleUrl);
  const memory = new WebAssembly.Memory({ initial: 256, maximum: memoryPages });
  const sqlite3 = await init({ wasmMemory: memory });
  const { capi, wasm } = sqlite3;
  const db = new sqlite3.oo1.DB(":memory:", "c");
  const bytes = wasm.allocFromTypedArray(image);
  const flags = capi.SQLITE_DESERIALIZE_FREEONCLOSE | capi.SQLITE_DESERIALIZE_READONLY;
  db.checkRc(capi.sqlite3_deserialize(db.pointer, "main", bytes, image.byteLength, image.byteLength, flags));
  capi.sqlite3_limit(db.pointer, capi.SQLITE_LIMIT_LENGTH, maxValueBytes);
  capi.sqlite3_limit(db.pointer, capi.SQLITE_LIMIT_ATTACHED, 0);
  db.exec("PRAGMA hard_heap_limit = " + heapBytes);

  const failure = (rc) => ({
    ok: false,
    kind: rc === capi.SQLITE_TOOBIG ? "too_big" : (rc & 0xff) === capi.SQLITE_NOMEM ? "out_of_memory" : "sql_error",
    message: capi.sqlite3_errmsg(db.pointer),
  });
  const cell = (stmt, i) => {
    switch (capi.sqlite3_column_type(stmt, i)) {
      case capi.SQLITE_INTEGER: {
        const v = capi.sqlite3_column_int64(stmt, i);
        return typeof v === "bigint" && (v > Number.MAX_SAFE_INTEGER || v < Number.MIN_SAFE_INTEGER) ? String(v) : Number(v);
      }
      case capi.SQLITE_FLOAT: return capi.sqlite3_column_double(stmt, i);
      case capi.SQLITE_TEXT: return capi.sqlite3_column_text(stmt, i);
      case capi.SQLITE_BLOB: return "<blob " + capi.sqlite3_column_bytes(stmt, i) + " bytes>";
      default: return null;
    }
  };
  const sized = (stmt, i) => {
    const type = capi.sqlite3_column_type(stmt, i);
    return type === capi.SQLITE_TEXT || type === capi.SQLITE_BLOB ? capi.sqlite3_column_bytes(stmt, i) : 8;
  };
  const read = (stmt, maxRows, maxBytes) => {
    const count = capi.sqlite3_column_count(stmt);
    const columns = [];
    for (let i = 0; i < count; i++) columns.push(capi.sqlite3_column_name(stmt, i));
    const rows = [];
    let total = 0;
    for (;;) {
      const rc = capi.sqlite3_step(stmt);
      if (rc === capi.SQLITE_DONE) return { ok: true, columns, rows, truncated: false };
      if (rc !== capi.SQLITE_ROW) return failure(rc);
      if (rows.length === maxRows) return { ok: true, columns, rows, truncated: "rows" };
      for (let i = 0; i < count; i++) total += sized(stmt, i);
      if (total > maxBytes) return { ok: true, columns, rows, truncated: "bytes" };
      const row = [];
      for (let i = 0; i < count; i++) row.push(cell(stmt, i));
      rows.push(row);
    }
  };
  const query = ({ sql, maxRows, maxBytes }) => {
    const stack = wasm.pstack.pointer;
    const [text, length] = wasm.allocCString(sql, true);
    let stmt;
    try {
      const ppStmt = wasm.pstack.allocPtr();
      const ppTail = wasm.pstack.allocPtr();
      let rc = capi.sqlite3_prepare_v2(db.pointer, text, length, ppStmt, ppTail);
      if (rc) return failure(rc);
      stmt = wasm.peekPtr(ppStmt);
      if (!stmt) return { ok: false, kind: "no_rows" };
      // SQLite's parser decides whether anything but whitespace and comments follows.
      const tail = wasm.peekPtr(ppTail);
      rc = capi.sqlite3_prepare_v2(db.pointer, tail, length - (tail - text), ppStmt, null);
      const next = rc ? undefined : wasm.peekPtr(ppStmt);
      if (next) capi.sqlite3_finalize(next);
      if (rc || next) return { ok: false, kind: "many_statements" };
      if (!capi.sqlite3_stmt_readonly(stmt)) return { ok: false, kind: "not_read_only" };
      if (capi.sqlite3_column_count(stmt) === 0) return { ok: false, kind: "no_rows" };
      return read(stmt, maxRows, maxBytes);
    } catch (error) {
      return { ok: false, kind: "sql_error", message: String((error && error.message) || error) };
    } finally {
      if (stmt) capi.sqlite3_finalize(stmt);
      wasm.dealloc(text);
      wasm.pstack.restore(stack);
    }
  };
  parentPort.on("message", (message) => parentPort.postMessage({ ...query(message), memoryBytes: memory.buffer.byteLength }));
})();
`;

type QueryWorkerReply = { memoryBytes: number } & (
  | { ok: true; columns: string[]; rows: unknown[][]; truncated: QueryResult["truncated"] }
  | { ok: false; kind: "not_read_only" | "no_rows" | "many_statements" | "too_big" | "out_of_memory" | "sql_error"; message?: string }
);

interface Waiter {
  take(worker: Worker): void;
  fail(error: Error): void;
}

/** What the pool has done, for operations and tests. */
export interface SqliteQueryEngineStats {
  /** Query workers started since the engine was made. */
  started: number;
  /** Most query workers alive at one time. */
  peakWorkers: number;
  /** Largest WebAssembly memory a query worker reported after a query. */
  peakMemoryBytes: number;
  /** Queries waiting for a worker now. */
  queued: number;
}

export interface SqliteQueryEngineOptions {
  /** The serialized database (`buildSalesDatabase`), made on the first query and opened read-only by every worker. */
  image: () => Promise<Uint8Array>;
  schemaDescription: string;
  /** Default: `DEFAULT_SQLITE_POOL_SIZE`. */
  poolSize?: number;
  /** Default: `DEFAULT_SQLITE_QUEUE_SIZE`. */
  queueSize?: number;
  /** Default: `DEFAULT_SQLITE_IDLE_WORKERS`. */
  idleWorkers?: number;
  /** Default: `DEFAULT_SQLITE_MAX_VALUE_BYTES`. */
  maxValueBytes?: number;
  /** Default: `DEFAULT_SQLITE_HEAP_BYTES`. */
  heapBytes?: number;
}

/**
 * Read-only SQLite (WebAssembly) in a bounded pool of worker threads. A query that passes its time
 * limit, or whose caller gives up, is stopped with `worker.terminate()`, which interrupts the
 * WebAssembly mid-statement; the next query gets a fresh worker. At most `poolSize` workers run
 * and `queueSize` queries wait; beyond that a query is refused as busy, so a flood of queries
 * costs bounded memory and threads. Each worker's memory is capped inside the engine (see the
 * worker source), and results are capped in rows and bytes.
 */
export class SqliteQueryEngine implements QueryEngine {
  readonly dialect = "sqlite" as const;
  readonly schemaDescription: string;
  readonly #loadImage: () => Promise<Uint8Array>;
  #loading: Promise<Uint8Array> | undefined;
  #image: Uint8Array | undefined;
  readonly #poolSize: number;
  readonly #queueSize: number;
  readonly #idleWorkers: number;
  readonly #maxValueBytes: number;
  readonly #heapBytes: number;
  readonly #alive = new Set<Worker>();
  readonly #idle: Worker[] = [];
  readonly #waiting: Waiter[] = [];
  readonly #stats: Omit<SqliteQueryEngineStats, "queued"> = { started: 0, peakWorkers: 0, peakMemoryBytes: 0 };
  #closed = false;

  constructor(options: SqliteQueryEngineOptions) {
    this.#loadImage = options.image;
    this.schemaDescription = options.schemaDescription;
    this.#poolSize = options.poolSize ?? DEFAULT_SQLITE_POOL_SIZE;
    this.#queueSize = options.queueSize ?? DEFAULT_SQLITE_QUEUE_SIZE;
    this.#idleWorkers = options.idleWorkers ?? DEFAULT_SQLITE_IDLE_WORKERS;
    this.#maxValueBytes = options.maxValueBytes ?? DEFAULT_SQLITE_MAX_VALUE_BYTES;
    this.#heapBytes = options.heapBytes ?? DEFAULT_SQLITE_HEAP_BYTES;
  }

  get stats(): SqliteQueryEngineStats {
    return { ...this.#stats, queued: this.#waiting.length };
  }

  async query(sql: string, limits: QueryLimits): Promise<QueryResult> {
    if (this.#closed) throw new Error("SqliteQueryEngine is closed");
    // Building the sample database once, on the first query, is not the query's time.
    this.#image ??= await (this.#loading ??= this.#loadImage().finally(() => (this.#loading = undefined)));
    if (limits.signal?.aborted) throw queryCancelled();
    const deadline = Date.now() + limits.timeoutMs;
    const worker = await this.#acquire(this.#image, deadline, limits);
    let reply: QueryWorkerReply;
    try {
      reply = await this.#ask(worker, sql, deadline, limits);
    } catch (error) {
      this.#stop(worker);
      throw error;
    }
    this.#stats.peakMemoryBytes = Math.max(this.#stats.peakMemoryBytes, reply.memoryBytes);
    this.#release(worker);

    if (reply.ok) return { columns: reply.columns, rows: reply.rows, truncated: reply.truncated };
    switch (reply.kind) {
      case "not_read_only":
        throw new ToolError("only read-only queries are allowed: SQLite classifies this statement as a write", "sql_query");
      case "no_rows":
        throw new ToolError("only queries that return rows (SELECT, WITH ... SELECT) are allowed", "sql_query");
      case "many_statements":
        throw new ToolError("the text holds more than one statement; send one query at a time", "sql_query");
      case "too_big":
        throw new ToolError(
          `a value in the query grew past ${this.#maxValueBytes} bytes and was stopped; select shorter values (substr) or aggregate`,
          "sql_query",
        );
      case "out_of_memory":
        throw new ToolError(
          `the query needed more than the ${Math.round(this.#heapBytes / 2 ** 20)} MiB a query may use; aggregate, filter or add LIMIT`,
          "sql_query",
        );
      default:
        throw new ToolError(`SQLite error: ${reply.message ?? "unknown"}`, "sql_query");
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const waiter of [...this.#waiting]) waiter.fail(new ToolError("the query engine is shutting down", "sql_query"));
    this.#idle.length = 0;
    const all = [...this.#alive];
    this.#alive.clear();
    await Promise.all(all.map((w) => w.terminate()));
  }

  /** An idle worker, a new one while the pool has room, or a place in the queue while it has room. */
  #acquire(image: Uint8Array, deadline: number, limits: QueryLimits): Promise<Worker> {
    const idle = this.#idle.pop();
    if (idle) return Promise.resolve(idle);
    if (this.#alive.size < this.#poolSize) return Promise.resolve(this.#start(image));
    if (this.#waiting.length >= this.#queueSize) {
      return Promise.reject(
        new ToolError(
          `busy: ${this.#alive.size} queries are running and ${this.#waiting.length} waiting, the most this engine takes; try again shortly`,
          "sql_query",
        ),
      );
    }
    return new Promise<Worker>((resolve, reject) => {
      const leave = () => {
        clearTimeout(timer);
        limits.signal?.removeEventListener("abort", onAbort);
        const at = this.#waiting.indexOf(waiter);
        if (at >= 0) this.#waiting.splice(at, 1);
      };
      const waiter: Waiter = {
        take: (worker) => {
          leave();
          resolve(worker);
        },
        fail: (error) => {
          leave();
          reject(error);
        },
      };
      const onAbort = () => {
        leave();
        reject(queryCancelled());
      };
      const timer = setTimeout(() => {
        leave();
        reject(queryTimedOut(limits.timeoutMs));
      }, deadline - Date.now());
      limits.signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiting.push(waiter);
    });
  }

  /** Hands a worker whose query ended to the next waiting query, keeps it idle, or stops it. */
  #release(worker: Worker): void {
    if (this.#closed) return;
    const next = this.#waiting[0];
    if (next) next.take(worker);
    else if (this.#idle.length < this.#idleWorkers) this.#idle.push(worker);
    else this.#stop(worker);
  }

  /** Stops a worker (mid-query, or one that has already exited); a waiting query then gets a fresh one. */
  #stop(worker: Worker): void {
    if (this.#alive.delete(worker)) void worker.terminate();
    const next = this.#waiting[0];
    if (next && this.#image && !this.#closed && this.#alive.size < this.#poolSize) next.take(this.#start(this.#image));
  }

  #start(image: Uint8Array): Worker {
    const worker = new Worker(QUERY_WORKER_SOURCE, {
      eval: true,
      workerData: {
        moduleUrl: sqliteModuleUrl(),
        image,
        heapBytes: this.#heapBytes,
        memoryPages: Math.ceil((this.#heapBytes + WASM_OVERHEAD_BYTES) / WASM_PAGE_BYTES),
        maxValueBytes: this.#maxValueBytes,
      },
      resourceLimits: WORKER_RESOURCE_LIMITS,
    });
    this.#alive.add(worker);
    this.#stats.started++;
    this.#stats.peakWorkers = Math.max(this.#stats.peakWorkers, this.#alive.size);
    // A worker that dies while idle must not be handed the next query.
    worker.once("exit", () => {
      this.#alive.delete(worker);
      const at = this.#idle.indexOf(worker);
      if (at >= 0) this.#idle.splice(at, 1);
    });
    // An idle query worker must not keep the process alive.
    worker.unref();
    return worker;
  }

  #ask(worker: Worker, sql: string, deadline: number, limits: QueryLimits): Promise<QueryWorkerReply> {
    return new Promise<QueryWorkerReply>((resolve, reject) => {
      const settle = (outcome: () => void) => {
        clearTimeout(timer);
        worker.off("message", onMessage);
        worker.off("error", onError);
        worker.off("exit", onExit);
        limits.signal?.removeEventListener("abort", onAbort);
        outcome();
      };
      const onMessage = (reply: QueryWorkerReply) => settle(() => resolve(reply));
      const onError = (error: Error & { code?: string }) =>
        settle(() =>
          reject(
            error.code === "ERR_WORKER_OUT_OF_MEMORY"
              ? new ToolError("the result needed more memory than a query may use; select fewer rows or columns", "sql_query", { cause: error })
              : new ToolError("the query engine failed; try again", "sql_query", { cause: error }),
          ),
        );
      const onExit = () => settle(() => reject(new ToolError("the query engine stopped unexpectedly; try again", "sql_query")));
      const onAbort = () => settle(() => reject(queryCancelled()));
      const timer = setTimeout(() => settle(() => reject(queryTimedOut(limits.timeoutMs))), deadline - Date.now());
      worker.on("message", onMessage);
      worker.on("error", onError);
      worker.on("exit", onExit);
      if (limits.signal?.aborted) return onAbort();
      limits.signal?.addEventListener("abort", onAbort, { once: true });
      worker.postMessage({ sql, maxRows: limits.maxRows, maxBytes: limits.maxBytes ?? Number.POSITIVE_INFINITY });
    });
  }
}
