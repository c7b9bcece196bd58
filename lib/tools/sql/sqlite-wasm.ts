import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import type { Database, Sqlite3Static } from "@sqlite.org/sqlite-wasm";

/**
 * SQLite's own WebAssembly build: no native module, so `npm ci` compiles nothing and the Lambda
 * bundles can carry it (infra/bundling copies the package beside a bundle that imports it).
 */
export const SQLITE_WASM_PACKAGE = "@sqlite.org/sqlite-wasm";

/** File URL of the package's Node.js entry, for query workers, which import it themselves. */
export function sqliteModuleUrl(): string {
  return pathToFileURL(createRequire(import.meta.url).resolve(SQLITE_WASM_PACKAGE)).href;
}

/**
 * Where the library reports a failed statement, with its SQL text. The SQL is the model's and may
 * quote the user, so it is kept out of logs; every failure still reaches the caller as an exception.
 */
const SILENT = { debug() {}, log() {}, warn() {}, error() {} };

let sqlite: Promise<Sqlite3Static> | undefined;

/**
 * SQLite in this thread, loaded on first use: a deployment whose tools run on Athena and a
 * knowledge base never loads it.
 */
export function loadSqlite(): Promise<Sqlite3Static> {
  sqlite ??= (async () => {
    (globalThis as { sqlite3ApiConfig?: object }).sqlite3ApiConfig = SILENT;
    const { default: init } = (await import(sqliteModuleUrl())) as typeof import("@sqlite.org/sqlite-wasm");
    return init();
  })();
  return sqlite;
}

/** Opens a serialized database (`sqlite3_js_db_export`) in memory, read-only. Close it when done. */
export async function openDatabaseImage(image: Uint8Array): Promise<Database> {
  const { capi, oo1, wasm } = await loadSqlite();
  const db = new oo1.DB(":memory:", "c");
  const bytes = wasm.allocFromTypedArray(image);
  const flags = capi.SQLITE_DESERIALIZE_FREEONCLOSE | capi.SQLITE_DESERIALIZE_READONLY;
  db.checkRc(capi.sqlite3_deserialize(db.pointer!, "main", bytes, image.byteLength, image.byteLength, flags));
  return db;
}
