import { Logger } from "@aws-lambda-powertools/logger";
import { Metrics, MetricUnit } from "@aws-lambda-powertools/metrics";
import { SQSClient } from "@aws-sdk/client-sqs";
import secretsManager from "@middy/secrets-manager";
import type { Context } from "aws-lambda";
import { errorResponse } from "../../lib/api/error-response.js";
import { createApp, type App, type AppOptions } from "../../lib/app.js";
import { loadConfig } from "../../lib/config/config.js";
import { parseCredentials, type Credentials } from "../../lib/config/credentials.js";
import { ValidationError } from "../../lib/errors.js";
import { SqsTurnQueue, TURN_METRIC_NAMES, type TurnMetrics } from "../../lib/queue/index.js";
import type { SecretSource } from "../../lib/tools/index.js";

/** Everything here is created once per container and reused by every invocation. */
export const config = loadConfig();
export const logger = new Logger();
export const metrics = new Metrics();

export const turnQueue = config.deployment.turnQueueUrl
  ? new SqsTurnQueue({ client: new SQSClient({}), queueUrl: config.deployment.turnQueueUrl })
  : undefined;

/** Fetches the credentials secret into `context.credentials`, reusing it for `secretCacheMs`. */
export function credentialsMiddleware() {
  if (!config.deployment.secretArn) throw new ValidationError("SECRET_ARN is not set", [{ path: "SECRET_ARN", message: "required" }]);
  return secretsManager({
    fetchData: { credentials: config.deployment.secretArn },
    setToContext: true,
    cacheKey: "threadwise-credentials",
    cacheExpiry: config.deployment.secretCacheMs,
  });
}

export function credentialsOf(context: Context): Credentials {
  return parseCredentials((context as Context & { credentials?: unknown }).credentials, { requireTls: config.deployment.mongodbRequireTls });
}

export function requireTurnQueue(): SqsTurnQueue {
  if (!turnQueue) throw new ValidationError("TURN_QUEUE_URL is not set", [{ path: "TURN_QUEUE_URL", message: "required" }]);
  return turnQueue;
}

let current: { uri: string; app: Promise<App> } | undefined;

/**
 * The app (MongoClient, stores, graph) for these credentials: made on the first invocation,
 * reused after, and made again only when the secret names another database (rotation).
 */
export function appFor(credentials: Credentials, options: Omit<AppOptions, "mongoClient">): Promise<App> {
  if (current?.uri !== credentials.mongodbUri) {
    const previous = current;
    const app = createApp({ ...config, mongodbUri: credentials.mongodbUri }, { logger, secrets: secretsOf(credentials), ...options });
    current = { uri: credentials.mongodbUri, app };
    // A failed start must not stick: the next invocation tries again.
    app.catch(() => {
      if (current?.app === app) current = undefined;
    });
    previous?.app.then((old) => old.close()).catch(() => undefined);
  }
  return current!.app;
}

/** Tools read their credentials (Power BI) from the same secret, by key. */
function secretsOf(credentials: Credentials): SecretSource {
  return {
    get: async (name) => {
      const value = (credentials as Record<string, unknown>)[name];
      return typeof value === "string" ? value : undefined;
    },
  };
}

/** One data point per figure per finished turn; flushed by the logMetrics middleware. */
export function publishTurnMetrics(m: TurnMetrics): void {
  metrics.addMetric(TURN_METRIC_NAMES.stateTokens, MetricUnit.Count, m.stateTokens);
  metrics.addMetric(TURN_METRIC_NAMES.viewTokens, MetricUnit.Count, m.viewTokens);
  metrics.addMetric(TURN_METRIC_NAMES.inputTokens, MetricUnit.Count, m.inputTokens);
  metrics.addMetric(TURN_METRIC_NAMES.outputTokens, MetricUnit.Count, m.outputTokens);
  metrics.addMetric(TURN_METRIC_NAMES.cacheReadTokens, MetricUnit.Count, m.cacheReadTokens);
  metrics.addMetric(TURN_METRIC_NAMES.cacheWriteTokens, MetricUnit.Count, m.cacheWriteTokens);
  if (m.costUsd !== undefined) metrics.addMetric(TURN_METRIC_NAMES.costUsd, MetricUnit.NoUnit, m.costUsd);
  metrics.addMetric(TURN_METRIC_NAMES.toolCalls, MetricUnit.Count, m.toolCalls);
  metrics.addMetric(TURN_METRIC_NAMES.turnDurationMs, MetricUnit.Milliseconds, m.turnDurationMs);
  metrics.addMetric(TURN_METRIC_NAMES.omittedOutputs, MetricUnit.Count, m.omittedOutputs);
}

/** Server faults only, with names and numbers: never request or message contents. */
export function logServerError(error: unknown, request: { method: string; path: string }): void {
  if (errorResponse(error).status < 500) return;
  logger.error("request failed", { error: error instanceof Error ? error.name : "unknown", method: request.method, route: request.path.replace(/[0-9a-f-]{36}/gi, "{id}") });
}
