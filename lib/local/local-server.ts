import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { MongoClient } from "mongodb";
import { z } from "zod";
import { createApp, type App, type AppOptions } from "../app.js";
import { errorResponse } from "../api/error-response.js";
import { json } from "../api/http.js";
import { parseJsonBody } from "../api/request-parsing.js";
import type { Route } from "../api/router.js";
import { JwtVerifier } from "../auth/jwt-verifier.js";
import { jsonConsoleLogger } from "../logger.js";
import { DEFAULT_LOCAL_ISSUER, type Config } from "../config/config.js";
import { AuthenticationError, UnsupportedMediaTypeError } from "../errors.js";
import { consoleRoutes } from "./console-routes.js";
import { startEmbeddedMongo, type EmbeddedMongo } from "./embedded-mongo.js";
import { loadOrCreateLocalKeys, mintLocalToken, DEFAULT_LOCAL_DIR, type LocalKeys } from "./local-keys.js";
import { toHttpRequest, writeHttpResponse } from "./node-http-adapter.js";

export interface LocalServer {
  url: string;
  mongodbUri: string;
  app: App;
  close(): Promise<void>;
}

export interface LocalServerOptions {
  /** Where the signing key pair is kept. Default: {@link DEFAULT_LOCAL_DIR}. */
  localDir?: string;
  /** Listen here instead of `config.port`; 0 picks a free port. */
  port?: number;
  /** Overrides for the composed app (tests give their own model or tools). */
  app?: Partial<Omit<AppOptions, "authenticate" | "mongoClient">>;
}

/** Server faults only, as fixed messages with numbers and names: never request contents. */
function logServerError(error: unknown, request: { method: string; path: string }): void {
  if (errorResponse(error).status < 500) return;
  const name = error instanceof Error ? error.name : "unknown";
  console.error(JSON.stringify({ level: "error", message: "request failed", error: name, method: request.method, route: request.path.replace(/[0-9a-f-]{36}/gi, "{id}") }));
}

const principal = z.string().regex(/^[\w.@-]{1,64}$/, "1 to 64 letters, digits or . _ @ -");
const localTokenBody = z.strictObject({ user: principal, tenant: principal.optional(), roles: z.array(principal).max(20).optional() });
const LOOPBACK_HOST = /^(127\.0\.0\.1|localhost|\[::1\])(:\d+)?$/i;

/**
 * `POST /local/token`: the console's sign-in, minting what `npm run token` prints. JSON only (a
 * cross-site form cannot send it without a preflight this server never answers) and loopback
 * Host only (a DNS-rebound name is refused).
 */
function localTokenRoute(keys: LocalKeys): Route {
  return {
    method: "POST",
    pattern: /^\/local\/token$/,
    handler: async (request) => {
      if (!LOOPBACK_HOST.test(request.headers.host ?? "")) throw new AuthenticationError("local sign-in answers on a loopback host only");
      if (!/^application\/json\b/i.test(request.headers["content-type"] ?? "")) throw new UnsupportedMediaTypeError("local sign-in takes application/json only");
      const claims = parseJsonBody(request, localTokenBody);
      const token = await mintLocalToken(keys, claims);
      return json(200, { token, userId: claims.user, tenantId: claims.tenant ?? null }, { "cache-control": "no-store" });
    },
  };
}

/**
 * The product on one machine: the same router the Lambda handlers use, behind node:http,
 * with the embedded MongoDB unless `MONGODB_URI` names a real one.
 */
export async function startLocalServer(config: Config, options: LocalServerOptions = {}): Promise<LocalServer> {
  let embedded: EmbeddedMongo | undefined;
  const mongodbUri = config.mongodbUri ?? (embedded = await startEmbeddedMongo()).uri;
  const client = new MongoClient(mongodbUri);
  await client.connect();
  const keys = await loadOrCreateLocalKeys(options.localDir ?? DEFAULT_LOCAL_DIR);
  const verifier = new JwtVerifier({
    key: keys.publicKey,
    audience: config.auth.audience,
    issuer: config.auth.issuer ?? DEFAULT_LOCAL_ISSUER,
    tenantClaim: config.auth.tenantClaim,
    rolesClaim: config.auth.rolesClaim,
  });
  const app = await createApp({ ...config, mongodbUri }, {
    onError: logServerError,
    logger: jsonConsoleLogger,
    ...options.app,
    extraRoutes: [...consoleRoutes(), localTokenRoute(keys), ...(options.app?.extraRoutes ?? [])],
    mongoClient: client,
    authenticate: (request) => verifier.verifyAuthorizationHeader(request.headers.authorization),
  });
  const server: Server = createServer((req, res) => {
    toHttpRequest(req)
      .then((request) => app.route(request))
      .then((response) => writeHttpResponse(res, response))
      .catch(() => {
        if (!res.headersSent) writeHttpResponse(res, { status: 500, headers: { "content-type": "application/json" }, body: '{"error":{"code":"internal_error","message":"internal error"}}' });
      });
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? config.port, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    mongodbUri,
    app,
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await app.close();
      await client.close();
      await embedded?.stop();
    },
  };
}
