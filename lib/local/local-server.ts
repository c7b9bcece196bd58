import { createTenantKeys } from "../crypto/create-tenant-keys.js";
import { FieldCipher } from "../crypto/field-cipher.js";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { z } from "zod";
import { createApp, type App, type AppOptions } from "../app.js";
import { channelRoutes } from "../api/channel-routes.js";
import { createHttpHandler } from "../api/http-handler.js";
import { mcpRoutes } from "../api/mcp-routes.js";
import { mcpOAuthRoutes } from "../api/mcp-oauth-routes.js";
import { requestIdOf } from "../api/lifecycle-routes.js";
import type { AuditLog } from "../audit/audit-log.js";
import { MCP_OAUTH_CALLBACK_PATH } from "../config/mcp-oauth-config.js";
import { LOOPBACK_NETWORKS } from "../mcp/egress-fetch.js";
import { createMcpOAuth } from "../mcp/oauth/create-mcp-oauth.js";
import type { McpOAuth } from "../mcp/oauth/mcp-oauth.js";
import { serverErrorLogger } from "../api/server-error-log.js";
import { json, type HttpRequest } from "../api/http.js";
import { parseJsonBody } from "../api/request-parsing.js";
import type { Route } from "../api/router.js";
import { JwtVerifier } from "../auth/jwt-verifier.js";
import { ChannelEventDeduper } from "../channels/channel-event-deduper.js";
import { channelHandlersFor } from "../channels/channel-handlers.js";
import { channelWorkerFor } from "../channels/channel-worker.js";
import { channelDecisions } from "../channels/channel-decisions.js";
import { createGroupDirectories } from "../channels/group-directories.js";
import { slackViews } from "../channels/slack/slack-approval-modal.js";
import { ChannelRoles } from "../auth/channel-roles.js";
import type { ChannelCredentials } from "../config/credentials.js";
import { MongoTurnQueue } from "../queue/mongo-turn-queue.js";
import type { TurnJobOutcome, TurnJobWorker } from "../queue/turn-job-worker.js";
import { createMongoClient } from "../store/mongo-client.js";
import { jsonConsoleLogger, type StructuredLogger } from "../logger.js";
import { DEFAULT_LOCAL_ISSUER } from "../config/auth-config.js";
import type { Config } from "../config/config.js";
import { AuthenticationError, ThreadwiseError, UnsupportedMediaTypeError } from "../errors.js";
import { apiReferenceRoute } from "./api-reference.js";
import { consoleRoutes } from "./console-routes.js";
import { localToolsRoute } from "./local-tools-route.js";
import { DatabaseWatch } from "./database-watch.js";
import { startEmbeddedMongo, type EmbeddedMongo } from "./embedded-mongo.js";
import { loadOrCreateLocalKeys, mintLocalToken, DEFAULT_LOCAL_DIR, type LocalKeys } from "./local-keys.js";
import { toHttpRequest, writeHttpResponse } from "./node-http-adapter.js";
import { PeriodicTask } from "./periodic-task.js";

export interface LocalServer {
  url: string;
  mongodbUri: string;
  app: App;
  /** Where Slack, Teams and async API turns (and resumes) wait for the worker, in MongoDB; `drain()` waits for them. */
  turnQueue: MongoTurnQueue;
  /** Runs queued turns and replies in the channel (the worker Lambda's logic, in this process). */
  worker: TurnJobWorker;
  /** Per-user OAuth for MCP servers: the providers' factory and the callback's side (docs/mcp-oauth.md), keys in `localDir`. */
  mcpOAuth: McpOAuth;
  /** Notices the database: restarts the embedded server when it dies, sets a database up again when it lost its set-up. */
  databaseWatch: DatabaseWatch;
  close(): Promise<void>;
}

export interface LocalServerOptions {
  /** Where the signing key pair is kept. Default: {@link DEFAULT_LOCAL_DIR}. */
  localDir?: string;
  /** Listen here instead of `config.port`; 0 picks a free port. */
  port?: number;
  /** Overrides for the composed app (tests give their own model or tools). */
  app?: Partial<Omit<AppOptions, "mongoClient">>;
  /** Serve `POST /slack/events` and `POST /teams/messages` for these (`channelCredentialsFromEnv`). Default: neither. */
  channels?: ChannelCredentials;
  /** The driver's command events on `app.database.db.client` (bench:long times the database with them). Default: off. */
  monitorCommands?: boolean;
}

/** One line per queued turn: its outcome and numbers, never its text. */
function logTurnJob(logger: StructuredLogger, outcome: TurnJobOutcome, channel: string, receiveCount: number): void {
  const error = "error" in outcome && outcome.error instanceof Error ? outcome.error.name : undefined;
  logger.info("turn job", { outcome: outcome.kind, channel, turnId: outcome.turnId, receiveCount, error });
}

/** What a local user sets to turn a channel on, said by the route of a channel that is off. */
const LOCAL_CHANNEL_HINTS = { slack: "set SLACK_SIGNING_SECRET and SLACK_BOT_TOKEN", teams: "set TEAMS_APP_ID and TEAMS_APP_PASSWORD" };

const logServerError = serverErrorLogger(jsonConsoleLogger);

const principal = z.string().regex(/^[\w.@-]{1,64}$/, "1 to 64 letters, digits or . _ @ -");
const localTokenBody = z.strictObject({ user: principal, tenant: principal.optional(), roles: z.array(principal).max(20).optional() });
const LOOPBACK_HOST = /^(127\.0\.0\.1|localhost|\[::1\])(:\d+)?$/i;

/**
 * `POST /local/token`: the console's sign-in, minting what `npm run token` prints. JSON only (a
 * cross-site form cannot send it without a preflight this server never answers) and loopback
 * Host only (a DNS-rebound name is refused).
 */
function localTokenRoute(keys: LocalKeys, audit: AuditLog): Route {
  return {
    method: "POST",
    pattern: /^\/local\/token$/,
    handler: async (request) => {
      if (!LOOPBACK_HOST.test(request.headers.host ?? "")) throw new AuthenticationError("local sign-in answers on a loopback host only");
      if (!/^application\/json\b/i.test(request.headers["content-type"] ?? ""))
        throw new UnsupportedMediaTypeError("local sign-in takes application/json only");
      const claims = parseJsonBody(request, localTokenBody);
      const token = await mintLocalToken(keys, claims);
      // A sign-in: recorded in the user's tenant's audit chain, with the roles it grants, never the token.
      await audit.append({
        action: "sign_in.local_token",
        actor: { issuer: "api", tenant: claims.tenant ?? null, subject: claims.user },
        tenant: { issuer: "api", tenant: claims.tenant ?? null },
        resource: {},
        channel: "api",
        requestId: requestIdOf(request),
        detail: { roles: claims.roles ?? [] },
      });
      return json(200, { token, userId: claims.user, tenantId: claims.tenant ?? null }, { "cache-control": "no-store" });
    },
  };
}

export class LocalServerError extends ThreadwiseError {
  override name = "LocalServerError";
}

function listen(server: Server, port: number, host: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve(server);
    });
  });
}

/**
 * The product on one machine: the same router the Lambda handlers use, behind node:http,
 * with the embedded MongoDB unless `MONGODB_URI` names a real one.
 */
export async function startLocalServer(config: Config, options: LocalServerOptions = {}): Promise<LocalServer> {
  let embedded: EmbeddedMongo | undefined;
  const mongodbUri = config.mongodbUri ?? (embedded = await startEmbeddedMongo()).uri;
  // The same timeouts as in AWS: an unreachable database answers 503 within them, not after the driver's 30 s.
  const client = createMongoClient(mongodbUri, { ...config.mongo, monitorCommands: options.monitorCommands });
  await client.connect();
  const keys = await loadOrCreateLocalKeys(options.localDir ?? DEFAULT_LOCAL_DIR);
  const verifier = new JwtVerifier({
    key: keys.publicKey,
    audience: config.auth.audience,
    issuer: config.auth.issuer ?? DEFAULT_LOCAL_ISSUER,
    tenantClaim: config.auth.tenantClaim,
    rolesClaim: config.auth.rolesClaim,
    requireTenant: config.auth.requireTenant,
  });
  const channels = options.channels ?? {};
  const logger = options.app?.logger ?? jsonConsoleLogger;
  // The worker needs the app's runner and the app needs the queue: the queue reaches the worker
  // once both exist, which is before the server takes its first request.
  let worker: TurnJobWorker | undefined;
  // Contents at rest: a key file per tenant under the local directory, unless CONTENT_ENCRYPTION=off (docs/security.md).
  const contentKeys = createTenantKeys(config.encryption, { db: client.db(config.dbName), localDir: options.localDir ?? DEFAULT_LOCAL_DIR });
  if (!contentKeys) logger.warn("content encryption is off: conversations are stored in clear", { setting: "CONTENT_ENCRYPTION" });
  // Durable, like SQS: a job in flight when the process died is delivered again once its visibility lapses (docs/recovery.md).
  const turnQueue = new MongoTurnQueue(client.db(config.dbName), {
    // A job's text sealed under its owner's tenant keys, named in the job (no conversation lookup).
    ...(contentKeys && { cipher: new FieldCipher({ keys: contentKeys, tenantOf: () => Promise.reject(new Error("turn jobs name their tenant")) }) }),
    handle: async (job, receiveCount) => {
      const outcome = await worker!.process(job, receiveCount);
      logTurnJob(logger, outcome, job.channel, receiveCount);
      return outcome.kind === "retry" ? { retryAfterSeconds: outcome.delaySeconds } : undefined;
    },
    onError: (error, job) => logger.error("turn job failed", { channel: job.channel, error: error instanceof Error ? error.name : "unknown" }),
    onDeadLetter: (job, receiveCount) => logger.error("turn job dead-lettered", { channel: job.channel, receiveCount }),
    visibilityTimeoutMs: config.leaseTtlMs,
    maxReceives: config.deployment.turnMaxReceives,
  });
  await turnQueue.setup();
  // The callback URL is the server's own once it listens (its port may be picked then), unless configured.
  let listeningUrl = `http://127.0.0.1:${options.port ?? config.port}`;
  const mcpOAuth = createMcpOAuth(config, {
    db: client.db(config.dbName),
    redirectUrl: () => `${listeningUrl}${MCP_OAUTH_CALLBACK_PATH}`,
    localDir: options.localDir ?? DEFAULT_LOCAL_DIR,
    egressAllow: LOOPBACK_NETWORKS,
    logger,
  }) as McpOAuth;
  // Local mode runs stdio MCP servers and reads MCP credentials from `MCP_LOCAL_SECRETS` (docs/mcp.md).
  const localSecrets = { get: async (name: string) => config.mcp.localSecrets[name] };
  const app = await createApp(
    { ...config, mongodbUri },
    {
      contentKeys,
      logger: jsonConsoleLogger,
      turnQueue,
      mcpStdio: true,
      // MCP servers on this machine are reached: loopback is allowed here explicitly (never in AWS, docs/mcp.md).
      mcpEgressAllow: LOOPBACK_NETWORKS,
      secrets: localSecrets,
      mcpOAuth: (principal, scope) => mcpOAuth.providerFor(principal, scope),
      ...options.app,
      mongoClient: client,
    },
  );
  const webhookHandlers = channelHandlersFor(config, {
    ingress: channels,
    notConfigured: LOCAL_CHANNEL_HINTS,
    deduper: new ChannelEventDeduper(client.db(config.dbName)),
    enqueue: (job) => turnQueue.enqueue(job),
    approvals: channelDecisions({
      conversations: app.database.conversations,
      approvals: app.approvals,
      roles: new ChannelRoles(config.auth.channelRoles, createGroupDirectories(channels, config.channels)),
    }),
    slackViews: channels.slack ? slackViews({ botToken: channels.slack.botToken, slackApiUrl: config.channels.slackApiUrl }) : undefined,
    logger,
  });
  const authenticate = (request: HttpRequest) => verifier.verifyAuthorizationHeader(request.headers.authorization);
  const route = createHttpHandler(app, config, {
    authenticate,
    extraRoutes: [
      ...consoleRoutes(),
      apiReferenceRoute(),
      localTokenRoute(keys, app.audit),
      localToolsRoute({ authenticate, tools: app.tools, model: config.model.provider }),
      ...channelRoutes(webhookHandlers),
      ...mcpOAuthRoutes(mcpOAuth),
    ],
    routesOverApi: mcpRoutes,
    onError: logServerError,
  });
  worker = channelWorkerFor(config, app, channels);
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    toHttpRequest(req)
      .then((request) => route(request))
      .then((response) => writeHttpResponse(res, response))
      .catch(() => {
        // A stream that broke after its headers can only be cut; the client reconnects with Last-Event-ID.
        if (res.headersSent) res.destroy();
        else
          return writeHttpResponse(res, {
            status: 500,
            headers: { "content-type": "application/json" },
            body: '{"error":{"code":"internal_error","message":"internal error"}}',
          });
      });
  };
  const server: Server = createServer(handle);
  const wanted = options.port ?? config.port;
  try {
    await listen(server, wanted, "127.0.0.1");
  } catch (error) {
    await app.close();
    await client.close();
    await embedded?.stop();
    throw new LocalServerError(`cannot listen on 127.0.0.1:${wanted} (${(error as NodeJS.ErrnoException).code ?? "error"}); set PORT to a free port`, {
      cause: error,
    });
  }
  // What the worker's 5-minute schedule does in AWS: an approval nobody decides expires, and its turn goes on.
  const sweep = new PeriodicTask(
    async () => {
      const result = await app.approvals.sweep();
      if (result.expired > 0 || result.resumed > 0) logger.info("approval sweep", { ...result });
    },
    config.approvalSweepSeconds * 1000,
    (error) => logger.error("approval sweep failed", { error: error instanceof Error ? error.name : "unknown" }),
  );
  sweep.start();
  // What the worker's recovery schedule does in AWS: a turn whose attempt died (this process, killed) is finished or resumed.
  const recover = async () => {
    const result = await app.recovery.sweep();
    if (result.found > 0) logger.info("turn recovery sweep", { ...result });
  };
  const recoverySweep = new PeriodicTask(recover, config.turnRecoverySweepSeconds * 1000, (error) =>
    logger.error("turn recovery sweep failed", { error: error instanceof Error ? error.name : "unknown" }),
  );
  // Before the queue delivers again what the last process left in flight: the two never race for one turn's lease at start.
  await recover().catch((error: unknown) => logger.error("turn recovery sweep failed", { error: error instanceof Error ? error.name : "unknown" }));
  turnQueue.start();
  recoverySweep.start();
  // What the worker's hourly key schedule does in AWS: rotations due (CONTENT_KEY_ROTATION_DAYS), then re-encryption (docs/security.md, "Rotation").
  const keyMaintenance = new PeriodicTask(
    async () => {
      const result = await app.keyRotation.maintain();
      if (result.rotated.length > 0 || result.reencrypted.length > 0) {
        logger.info("key maintenance", { rotated: result.rotated.length, reencrypted: result.reencrypted.filter((r) => r.status === "done").length });
      }
    },
    KEY_MAINTENANCE_INTERVAL_MS,
    (error) => logger.error("key maintenance failed", { error: error instanceof Error ? error.name : "unknown" }),
  );
  if (app.database.cipher.enabled) keyMaintenance.start();
  const databaseWatch = new DatabaseWatch({ database: app.database, embedded, logger });
  databaseWatch.start();
  const { port } = server.address() as AddressInfo;
  listeningUrl = `http://127.0.0.1:${port}`;
  // Loopback over IPv6 too, where the machine has it, for clients that resolve localhost to ::1.
  const server6: Server | undefined = await listen(createServer(handle), port, "::1").catch(() => undefined);
  return {
    url: `http://127.0.0.1:${port}`,
    mongodbUri,
    app,
    turnQueue,
    worker,
    mcpOAuth,
    databaseWatch,
    async close() {
      await databaseWatch.stop();
      await sweep.stop();
      await recoverySweep.stop();
      await keyMaintenance.stop();
      await turnQueue.stop();
      await Promise.all([server, server6].flatMap((s) => (s ? [closeServer(s)] : [])));
      await app.close();
      await client.close();
      await databaseWatch.embedded?.stop();
    },
  };
}

/** How often the local server runs key maintenance (due rotations, then re-encryption); hourly in AWS. */
export const KEY_MAINTENANCE_INTERVAL_MS = 300_000;

/** How long open requests (a stream, a slow upload) get to finish when the server closes, before their connections are cut. */
export const DEFAULT_CLOSE_GRACE_MS = 2_000;

/**
 * Stops accepting, closes idle keep-alive connections at once, and cuts the rest after the grace:
 * `server.close()` alone waits for every open connection, which a held request keeps for minutes.
 */
function closeServer(server: Server, graceMs = DEFAULT_CLOSE_GRACE_MS): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const cut = setTimeout(() => server.closeAllConnections(), graceMs);
  return closed.finally(() => clearTimeout(cut));
}
