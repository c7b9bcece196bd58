import { createApp, type App, type AppOptions } from "../../lib/app.js";
import { channelReplyCredentialsOf, type Credentials } from "../../lib/config/credentials.js";
import type { TurnJobWorker, TurnMetricsSink } from "../../lib/queue/index.js";
import { channelWorkerFor } from "../../lib/channels/channel-worker.js";
import { createMcpOAuth } from "../../lib/mcp/oauth/create-mcp-oauth.js";
import type { McpOAuth } from "../../lib/mcp/oauth/mcp-oauth.js";
import type { SecretSource } from "../../lib/tools/index.js";
import { contentKeysFor } from "./content-keys.js";
import { config, logger, mongoClientFor, publishLimitUsage, publishMcpEvent } from "./runtime.js";

let current: { client: unknown; app: Promise<App> } | undefined;

/**
 * The app (stores, tools, graph) over the container's MongoClient: made on the first invocation,
 * reused after, made again when the secret names another database. It makes no indexes: the
 * deploy step does, and the first request only checks that it did (`setup: "ensure"`). Contents are
 * sealed under each tenant's KMS key (`contentKeysFor`); keys that cannot be had fail here, each invocation, with 503.
 */
export function appFor(credentials: Credentials, options: Omit<AppOptions, "mongoClient" | "setup" | "logger" | "secrets">): Promise<App> {
  const client = mongoClientFor(credentials);
  if (current?.client !== client) {
    const contentKeys = contentKeysFor(client);
    const previous = current;
    const secrets = secretsOf(credentials);
    const oauth = lazyMcpOAuth(client, secrets);
    const app = createApp(config, {
      onLimitUsage: publishLimitUsage,
      onMcpEvent: publishMcpEvent,
      ...(oauth ? { mcpOAuth: (principal, scope) => oauth().providerFor(principal, scope) } : {}),
      ...options,
      mongoClient: client,
      contentKeys,
      setup: "ensure",
      logger,
      secrets,
    }).then((made) => {
      if (oauth) oauths.set(made, oauth);
      return made;
    });
    current = { client, app };
    // A failed start must not stick: the next invocation tries again.
    app.catch(() => {
      if (current?.app === app) current = undefined;
    });
    previous?.app.then((old) => old.close()).catch(() => undefined);
  }
  return current!.app;
}

/** Each app's per-user MCP OAuth, for the api's callback: the same one its turns' providers come from. */
const oauths = new WeakMap<App, () => McpOAuth>();

/** Per-user MCP OAuth over `app`'s database when the stage sets its KMS key and callback URL (docs/mcp-oauth.md); else undefined. */
export function mcpOAuthFor(app: App): McpOAuth | undefined {
  return oauths.get(app)?.();
}

/**
 * One McpOAuth per app, made on the first `oauth` server a turn meets (the KMS client with it), or
 * none without the stage's `mcpOAuth` (no key, no callback URL): such servers' tools are then not offered.
 */
function lazyMcpOAuth(client: ReturnType<typeof mongoClientFor>, secrets: SecretSource): (() => McpOAuth) | undefined {
  const { kmsKeyId, redirectUrl } = config.mcpOAuth;
  if (!kmsKeyId || !redirectUrl) return undefined;
  let made: McpOAuth | undefined;
  return () => (made ??= createMcpOAuth(config, { db: client.db(config.dbName), redirectUrl, secrets, logger }) as McpOAuth);
}

/**
 * Tools read their credentials (Power BI) from the function's secrets, by key. The MCP client reads
 * through it only keys under `mcp/` (`mcp/<name>` for `MCP_SERVERS`, `mcp/<issuer>/<tenant>/<name>`
 * for a tenant's entries, lib/mcp/mcp-secrets.ts): never `mongodbUri`, the channels' tokens or Power BI's.
 */
function secretsOf(credentials: Credentials): SecretSource {
  return {
    get: async (name) => {
      const value = (credentials as Record<string, unknown>)[name];
      return typeof value === "string" ? value : undefined;
    },
  };
}

/** The repliers hold tokens and token caches: made once per app and credentials version, not per turn. */
const workers = new WeakMap<App, { key: string; worker: TurnJobWorker }>();

export function workerFor(app: App, credentials: Credentials, onTurnCompleted: TurnMetricsSink): TurnJobWorker {
  const replies = channelReplyCredentialsOf(credentials);
  const key = JSON.stringify(replies);
  const cached = workers.get(app);
  if (cached?.key === key) return cached.worker;
  const worker = channelWorkerFor(config, app, replies, onTurnCompleted);
  workers.set(app, { key, worker });
  return worker;
}
