import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { MongoClient, type Db } from "mongodb";
import { loadConfig } from "../../lib/config/config.js";
import { silentLogger } from "../../lib/logger.js";
import { startLocalServer, type LocalServer, type LocalServerOptions } from "../../lib/local/local-server.js";
import { loadOrCreateLocalKeys, mintLocalToken, type TokenClaims } from "../../lib/local/local-keys.js";
import { dropKnownCollections } from "./drop-collections.js";
import { mongoUri } from "./mongo.js";
import { assertConformsToOpenApi } from "./openapi-conformance.js";

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

export interface TestServer {
  server: LocalServer;
  url: string;
  db: Db;
  dbName: string;
  token(user: string, claims?: Omit<TokenClaims, "user">): Promise<string>;
  call<T = any>(
    method: string,
    path: string,
    options?: { token?: string; json?: unknown; body?: string; headers?: Record<string, string> },
  ): Promise<ApiResponse<T>>;
  close(): Promise<void>;
}

/** The local server on a free port and a database of its own, reached over real HTTP. */
export async function startTestServer(env: Record<string, string> = {}, options: LocalServerOptions = {}): Promise<TestServer> {
  const dbName = `api_${randomUUID().slice(0, 8)}`;
  const localDir = await mkdtemp(join(tmpdir(), "threadwise-keys-"));
  const config = loadConfig({ MONGODB_URI: mongoUri(), MONGODB_DB: dbName, ...env });
  const server = await startLocalServer(config, { port: 0, localDir, ...options, app: { logger: silentLogger, ...options.app } });
  const keys = await loadOrCreateLocalKeys(localDir);
  const inspector = new MongoClient(mongoUri());
  await inspector.connect();
  const db = inspector.db(dbName);
  return {
    server,
    url: server.url,
    db,
    dbName,
    token: (user, claims = {}) => mintLocalToken(keys, { user, ...claims }),
    async call(method, path, { token, json, body, headers = {} } = {}) {
      const init: RequestInit = { method, headers: { ...headers } };
      if (token) (init.headers as Record<string, string>).authorization = `Bearer ${token}`;
      if (json !== undefined) {
        init.body = JSON.stringify(json);
        (init.headers as Record<string, string>)["content-type"] = "application/json";
      } else if (body !== undefined) init.body = body;
      const res = await fetch(`${server.url}${path}`, init);
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        // Non-JSON bodies are returned as text for the assertion to inspect.
      }
      // Every API test's responses are held to the OpenAPI document.
      assertConformsToOpenApi(method, path, res.status, parsed);
      return { status: res.status, headers: res.headers, body: parsed as any };
    },
    async close() {
      await dropKnownCollections(db);
      await inspector.close();
      await server.close();
    },
  };
}
