import { Logger } from "@aws-lambda-powertools/logger";
import { injectLambdaContext } from "@aws-lambda-powertools/logger/middleware";
import { logMetrics } from "@aws-lambda-powertools/metrics/middleware";
import middy, { type MiddlewareObj } from "@middy/core";
import { Metrics, MetricUnit } from "@aws-lambda-powertools/metrics";
import { Tracer } from "@aws-lambda-powertools/tracer";
import { captureLambdaHandler } from "@aws-lambda-powertools/tracer/middleware";
import { SQSClient } from "@aws-sdk/client-sqs";
import { SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import type { Context } from "aws-lambda";
import type { MongoClient } from "mongodb";
import { serverErrorLogger } from "../../lib/api/server-error-log.js";
import { loadConfig } from "../../lib/config/config.js";
import { CREDENTIAL_SECRETS, NOT_CONFIGURED_RETRY_AFTER_S, parseCredentials, requireCredentials, type Credentials } from "../../lib/config/credentials.js";
import { ServiceUnavailableError, ValidationError } from "../../lib/errors.js";
import type { SweepResult } from "../../lib/approvals/index.js";
import {
  APPROVAL_SWEEP_METRIC_NAMES,
  CALLER_FAILURE_REASONS,
  CHANNEL_DIMENSION,
  FUNCTION_DIMENSION,
  isDeployServerError,
  NOT_DEPLOY_FAILURE_REASONS,
  REASON_DIMENSION,
  TURN_OUTCOME_METRIC_NAMES,
  turnFailureReason,
  VERSION_DIMENSION,
  VERSION_METRIC_NAMES,
  WEBHOOK_METRIC_NAMES,
  xrayTraceHeader,
  type TraceContext,
  type TurnFailureReason,
} from "../../lib/observability/index.js";
import { SqsTurnQueue, TURN_METRIC_NAMES, type TurnMetrics } from "../../lib/queue/index.js";
import type { LimitUsageEvent } from "../../lib/limits/index.js";
import { LIMIT_METRIC_NAMES, TENANT_PROPERTY } from "../../lib/observability/limit-metrics.js";
import { MCP_METRIC_NAMES, MCP_OUTCOME_PROPERTY, MCP_SERVER_PROPERTY } from "../../lib/observability/mcp-metrics.js";
import type { McpCallEvent } from "../../lib/mcp/mcp-tool-catalog.js";
import { createMongoClient } from "../../lib/store/mongo-client.js";
import { CredentialSecrets, type SecretValues } from "./credential-secrets.js";

/**
 * What every function shares, created once per container and reused by every invocation. It
 * builds no app and no graph: the webhooks use only this; the api and worker add app-runtime.ts.
 */
export const config = loadConfig();
export const logger = new Logger();
export const metrics = new Metrics();
/** X-Ray through Powertools: active only in Lambda with tracing on; responses and errors are not captured (they hold message contents). */
export const tracer = new Tracer();

/** The current request's correlation id (set by each handler) and X-Ray trace header, for the turn it enqueues. */
function traceContext(): TraceContext {
  const correlationId = logger.getCorrelationId();
  const parent = tracer.isTracingEnabled() ? tracer.getSegment()?.id : undefined;
  const traceHeader = xrayTraceHeader({ root: tracer.getRootXrayTraceId(), parent, sampled: tracer.isTraceSampled() });
  return { correlationId: typeof correlationId === "string" ? correlationId : undefined, traceHeader };
}

export const turnQueue = config.deployment.turnQueueUrl
  ? new SqsTurnQueue({
      client: tracer.captureAWSv3Client(new SQSClient({})),
      queueUrl: config.deployment.turnQueueUrl,
      onEnqueued: () => metrics.addMetric(TURN_OUTCOME_METRIC_NAMES.queued, MetricUnit.Count, 1),
      traceContext,
    })
  : undefined;

/**
 * The middlewares every function starts with: the X-Ray handler segment (without the response or
 * the error, which may hold message contents), the Lambda context in every log line, and the
 * metrics flushed at the end (not for the setup function, which publishes none).
 */
export function observability(options: { metrics: boolean } = { metrics: true }) {
  const traced = [captureLambdaHandler(tracer, { captureResponse: false }), injectLambdaContext(logger), invokedVersion()];
  return options.metrics ? [...traced, logMetrics(metrics)] : traced;
}

/** The function and version this container runs (Lambda's context: the executed version when invoked through the alias). */
let invoked: { functionName: string; functionVersion: string } | undefined;

function invokedVersion(): MiddlewareObj<unknown, unknown, Error, Context> {
  return {
    before: ({ context }) => {
      invoked = { functionName: context.functionName, functionVersion: context.functionVersion };
    },
  };
}

/** One count of a figure a deployment's canary watches, under this version alone (docs/operations.md, "Deploys that roll back"). */
function countForVersion(name: string): void {
  if (!invoked) return;
  metrics
    .singleMetric()
    .addDimensions({ [FUNCTION_DIMENSION]: invoked.functionName, [VERSION_DIMENSION]: invoked.functionVersion })
    .addMetric(name, MetricUnit.Count, 1);
}

/** A response of the api or a webhook: a server error a deploy can cause (not an intended 503) counts against this version. */
export function publishResponseStatus(status: number): void {
  if (isDeployServerError(status)) countForVersion(VERSION_METRIC_NAMES.serverErrors);
}

/** The container's credentials secrets, made (and their fetch started) by the first `credentialsMiddleware()`. */
let secrets: CredentialSecrets | undefined;
/** What each invocation's `before` fetched, or why it could not: read by `credentialsOf`. */
const fetched = new WeakMap<Context, { values: SecretValues } | { error: unknown }>();

/**
 * Fetches the credentials secrets this function is granted (their ARNs are in its environment,
 * one variable per secret), at cold start and again after `secretCacheMs`. A secret that cannot be
 * read fails no invocation here: `credentialsOf` answers it, inside each handler's own error
 * handling (503, a retried record, a deploy step that still answers CloudFormation).
 */
export function credentialsMiddleware(): MiddlewareObj<unknown, unknown, Error, Context> {
  const arns = config.deployment.secretArns;
  if (arns.database === undefined) {
    const variable = CREDENTIAL_SECRETS.database.variable;
    throw new ValidationError(`${variable} is not set`, [{ path: variable, message: "required" }]);
  }
  if (!secrets) {
    secrets = new CredentialSecrets({
      client: new SecretsManagerClient({}),
      arns: arns as Record<string, string>,
      cacheMs: config.deployment.secretCacheMs,
      onFailure: (error) => logger.error("credentials secret unreadable", { secret: error.secret, error: errorName(error.cause) }),
    });
    secrets.prefetch();
  }
  const current = secrets;
  return {
    before: async ({ context }) => {
      try {
        fetched.set(context, { values: await current.values() });
      } catch (error) {
        fetched.set(context, { error });
      }
    },
  };
}

const errorName = (error: unknown) => (error instanceof Error ? error.name : "unknown");

/**
 * The keys of this function's secrets, merged and validated; empty keys are unset. A secret that
 * cannot be read or does not validate is the deployment's fault, not the caller's: 503, logged.
 */
export function credentialsOf(context: Context): Credentials {
  const secretValues = fetched.get(context);
  if (secretValues === undefined || "error" in secretValues) {
    throw new ServiceUnavailableError("the credentials secrets could not be read", NOT_CONFIGURED_RETRY_AFTER_S, { cause: secretValues?.error });
  }
  try {
    return parseCredentials(secretValues.values, { requireTls: config.deployment.mongodbRequireTls });
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    logger.error("credentials invalid", { details: error.details });
    throw new ServiceUnavailableError("the credentials secrets are invalid", NOT_CONFIGURED_RETRY_AFTER_S, { cause: error });
  }
}

export function requireTurnQueue(): SqsTurnQueue {
  if (!turnQueue) throw new ValidationError("TURN_QUEUE_URL is not set", [{ path: "TURN_QUEUE_URL", message: "required" }]);
  return turnQueue;
}

let current: { uri: string; client: MongoClient } | undefined;

/**
 * The container's one MongoClient, sized for Lambda by the stack (docs/deploying.md, "MongoDB from Lambda").
 * It connects on its first operation, not here; a new URI in the secret (rotation), or a first
 * connection that failed, replaces it.
 */
export function mongoClientFor(credentials: Credentials): MongoClient {
  const { mongodbUri } = requireCredentials(credentials, ["mongodbUri"]);
  if (current?.uri !== mongodbUri) {
    current?.client.close().catch(() => undefined);
    const client = createMongoClient(mongodbUri, config.mongo);
    // A client whose first connection failed stays closed for good (mongodb 6): the next invocation makes a new one.
    client.once("topologyClosed", () => {
      if (current?.client === client) current = undefined;
    });
    current = { uri: mongodbUri, client };
  }
  return current.client;
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

/**
 * One record per settled model call of a tenant: its tokens, cost and budget share, with the
 * tenant as an EMF property (not a dimension, so tenants add no metrics). A user's usage is in the admin API.
 */
export function publishLimitUsage(event: LimitUsageEvent): void {
  if (event.scope.kind !== "tenant") return;
  const tenant = `${event.scope.issuer}:${event.scope.tenant}`;
  // A single metric is written at once, its metadata with it: one record per figure, each naming the tenant.
  const publish = (name: string, unit: (typeof MetricUnit)[keyof typeof MetricUnit], value: number) => {
    const record = metrics.singleMetric();
    record.addMetadata(TENANT_PROPERTY, tenant);
    record.addMetric(name, unit, value);
  };
  publish(LIMIT_METRIC_NAMES.tenantTokens, MetricUnit.Count, event.tokens);
  publish(LIMIT_METRIC_NAMES.tenantCostUsd, MetricUnit.NoUnit, event.costUsd);
  if (event.budgetPercent !== undefined) publish(LIMIT_METRIC_NAMES.tenantBudgetPercent, MetricUnit.Percent, event.budgetPercent);
}

/** One record per MCP call (its duration) and per failed call or discovery (docs/mcp.md), naming the server and the outcome. */
export function publishMcpEvent(event: McpCallEvent): void {
  const publish = (name: string, unit: (typeof MetricUnit)[keyof typeof MetricUnit], value: number) => {
    const record = metrics.singleMetric();
    record.addMetadata(MCP_SERVER_PROPERTY, event.server);
    record.addMetadata(MCP_OUTCOME_PROPERTY, `${event.kind}:${event.outcome}`);
    record.addMetric(name, unit, value);
  };
  if (event.kind === "call") publish(MCP_METRIC_NAMES.callDuration, MetricUnit.Milliseconds, event.durationMs);
  if (event.outcome !== "success") publish(MCP_METRIC_NAMES.failures, MetricUnit.Count, 1);
}

/** One data point per figure per run of the approvals sweep; flushed by the logMetrics middleware. */
export function publishApprovalSweep(result: SweepResult): void {
  metrics.addMetric(APPROVAL_SWEEP_METRIC_NAMES.expired, MetricUnit.Count, result.expired);
  metrics.addMetric(APPROVAL_SWEEP_METRIC_NAMES.resumed, MetricUnit.Count, result.resumed);
  metrics.addMetric(APPROVAL_SWEEP_METRIC_NAMES.backlog, MetricUnit.Count, Number(result.more));
}

/** Server faults only, with names and numbers: never request or message contents. */
export const logServerError = serverErrorLogger(logger);

/**
 * One count of a turn outcome, twice: under the service alone (what the alarms watch) and under
 * the service and the reason (what the dashboard splits by). The second is emitted at once.
 */
function countTurnOutcome(name: string, reason: TurnFailureReason): void {
  metrics.addMetric(name, MetricUnit.Count, 1);
  metrics.singleMetric().addDimension(REASON_DIMENSION, reason).addMetric(name, MetricUnit.Count, 1);
}

/** A worker attempt that failed and will run again. */
export function publishTurnRetried(error: unknown): TurnFailureReason {
  const reason = turnFailureReason(error);
  countTurnOutcome(TURN_OUTCOME_METRIC_NAMES.retried, reason);
  return reason;
}

/** A turn the worker stopped trying: its user was told it failed. */
export function publishTurnGivenUp(error: unknown): TurnFailureReason {
  const reason = turnFailureReason(error);
  countTurnOutcome(TURN_OUTCOME_METRIC_NAMES.givenUp, reason);
  countTurnOutcome(TURN_OUTCOME_METRIC_NAMES.failed, reason);
  if (!NOT_DEPLOY_FAILURE_REASONS.has(reason)) countForVersion(VERSION_METRIC_NAMES.turnsFailed);
  return reason;
}

/** A turn that failed in the API's request; a refusal of the caller's request (4xx, nothing ran) is not counted. */
export function publishTurnFailed(error: unknown): void {
  const reason = turnFailureReason(error);
  if (CALLER_FAILURE_REASONS.has(reason)) return;
  countTurnOutcome(TURN_OUTCOME_METRIC_NAMES.failed, reason);
  if (!NOT_DEPLOY_FAILURE_REASONS.has(reason)) countForVersion(VERSION_METRIC_NAMES.turnsFailed);
  logger.error("turn failed", { reason, error: error instanceof Error ? error.name : "unknown" });
}

/** A webhook's answer: its 4xx and 5xx counted by channel (a spike of 4xx is a signing or key mismatch). */
export function publishWebhookStatus(channel: string, status: number): void {
  const name = status >= 500 ? WEBHOOK_METRIC_NAMES.serverErrors : status >= 400 ? WEBHOOK_METRIC_NAMES.clientErrors : undefined;
  if (name) metrics.singleMetric().addDimension(CHANNEL_DIMENSION, channel).addMetric(name, MetricUnit.Count, 1);
  publishResponseStatus(status);
}

/**
 * The middleware every event function runs under (api, worker, webhooks): the X-Ray segment, the
 * Lambda context in the logs, the metrics flushed, the credentials secrets fetched.
 */
export function withRuntime<TEvent, TResult>(handler: (event: TEvent, context: Context) => Promise<TResult>) {
  return middy(handler).use(observability()).use(credentialsMiddleware());
}
