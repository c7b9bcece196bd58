import { processPartialResponse, SqsFifoPartialProcessorAsync } from "@aws-lambda-powertools/batch";
import type { Context, SQSEvent, SQSRecord } from "aws-lambda";
import type { App } from "../lib/app.js";
import { isTurnRecoveryEvent, type RecoverySweepResult, type TurnRecoveryEvent } from "../lib/agent/index.js";
import { isApprovalSweepEvent, type ApprovalSweepEvent, type SweepResult } from "../lib/approvals/index.js";
import { isKeyMaintenanceEvent, type KeyMaintenanceEvent } from "../lib/lifecycle/key-maintenance-event.js";
import { parseTurnJob } from "../lib/queue/index.js";
import type { Credentials } from "../lib/config/credentials.js";
import { ThreadwiseError, ValidationError } from "../lib/errors.js";
import { CORRELATION_ID_ATTRIBUTE, MESSAGING_SYSTEMS, withConsumerSpan } from "../lib/observability/index.js";
import { appFor, workerFor } from "./shared/app-runtime.js";
import {
  credentialsOf,
  logger,
  logServerError,
  publishApprovalSweep,
  publishTurnGivenUp,
  publishTurnMetrics,
  publishTurnRetried,
  requireTurnQueue,
  tracer,
  turnQueue,
  withRuntime,
} from "./shared/runtime.js";

/** Thrown for a record the queue should deliver again; its visibility is already set to the retry delay. */
class TurnRetryError extends ThreadwiseError {
  override name = "TurnRetryError";
}

async function runTurn(record: SQSRecord, context: Context): Promise<void> {
  // The id of the request that queued the turn, so its lines and the turn's share it; a message without one is its own.
  logger.setCorrelationId(record.messageAttributes[CORRELATION_ID_ATTRIBUTE]?.stringValue ?? record.messageId);
  let job;
  try {
    job = parseTurnJob(record.body);
  } catch (error) {
    // A body that is not a turn job never will be: drop it rather than retry it into the DLQ.
    if (error instanceof ValidationError) return logger.error("invalid turn job dropped", { messageId: record.messageId });
    throw error;
  }
  const { app, credentials } = await appOf(context);
  const receiveCount = Number(record.attributes.ApproximateReceiveCount);
  const worker = workerFor(app, credentials, publishTurnMetrics);
  // The turn's spans continue the trace of the request that queued it (docs/operations.md, "Tracing").
  const outcome = await withConsumerSpan({ system: MESSAGING_SYSTEMS.sqs }, job.trace, () =>
    worker.process(job, receiveCount, () => context.getRemainingTimeInMillis()),
  );
  const fields = { outcome: outcome.kind, channel: job.channel, turnId: outcome.turnId, receiveCount };
  tracer.putAnnotation("turnId", outcome.turnId);
  if (outcome.kind === "retry") {
    const reason = publishTurnRetried(outcome.error);
    logger.warn("turn will be retried", { ...fields, reason, error: errorName(outcome.error), delaySeconds: outcome.delaySeconds });
    await requireTurnQueue().retryAfter(record.receiptHandle, outcome.delaySeconds);
    throw new TurnRetryError(`turn ${outcome.turnId} will be retried`);
  }
  if (outcome.kind === "gave-up") {
    // The handler succeeds (the message must not come back), so this line and the metric are what an operator sees.
    const reason = publishTurnGivenUp(outcome.error);
    return logger.error("turn given up", { ...fields, reason, error: errorName(outcome.error) });
  }
  logger.info("turn job", fields);
}

const errorName = (error: unknown) => (error instanceof Error ? error.name : "unknown");

/** The app, its database checked; unset keys or an unreachable database are logged, and the message comes back later. */
async function appOf(context: Context): Promise<{ app: App; credentials: Credentials }> {
  try {
    const credentials = credentialsOf(context);
    // With the queue: the sweep and a decision hand resumed turns to it.
    const app = await appFor(credentials, { turnQueue });
    await app.ready();
    return { app, credentials };
  } catch (error) {
    logServerError(error, { method: "SQS", path: "turn job" });
    throw error;
  }
}

const processor = new SqsFifoPartialProcessorAsync();

/**
 * The recovery schedule's run, and the worker's first batch in a container (docs/recovery.md):
 * turns whose attempt died are finished from their thread or queued to resume. A stage without
 * a database URI yet has nothing to recover.
 */
async function recoverTurns(context: Context): Promise<RecoverySweepResult | { status: "skipped-no-uri" }> {
  if (credentialsOf(context).mongodbUri === undefined) return { status: "skipped-no-uri" };
  const { app } = await appOf(context);
  const result = await app.recovery.sweep();
  logger.info("turn recovery sweep", { ...result });
  return result;
}

/** Whether this container has run its start-up recovery sweep. */
let recoveredOnStart = false;

/**
 * The schedule's run: overdue approvals expired, their turns queued to resume (docs/approvals.md,
 * "Expiry"). A stage whose database secret is still empty (a first deploy) has nothing to sweep,
 * which is no function error for the errors alarm and a deployment's rollback to see.
 */
async function sweepApprovals(context: Context): Promise<SweepResult | { status: "skipped-no-uri" }> {
  if (credentialsOf(context).mongodbUri === undefined) {
    logger.warn("approval sweep skipped", { reason: "mongodbUri is empty in the database secret" });
    return { status: "skipped-no-uri" };
  }
  const { app } = await appOf(context);
  const result = await app.approvals.sweep();
  publishApprovalSweep(result);
  logger.info("approval sweep", { ...result });
  return result;
}

/** Milliseconds of the invocation left when key maintenance stops after its batch: the next hourly run resumes there. */
const KEY_MAINTENANCE_MARGIN_MS = 30_000;

/**
 * The key schedule's run (docs/security.md, "Rotation"): the tenants' keys due are rotated, then
 * re-encryption goes on until the invocation's time nearly runs out. A stage without a database URI
 * yet has nothing to rotate.
 */
async function maintainKeys(context: Context) {
  if (credentialsOf(context).mongodbUri === undefined) return { status: "skipped-no-uri" as const };
  const { app } = await appOf(context);
  const result = await app.keyRotation.maintain({ shouldStop: () => context.getRemainingTimeInMillis() < KEY_MAINTENANCE_MARGIN_MS });
  const summary = {
    rotated: result.rotated.length,
    reencrypted: result.reencrypted.filter((r) => r.status === "done").length,
    runs: result.reencrypted.length,
  };
  logger.info("key maintenance", summary);
  return summary;
}

/**
 * Runs queued turns (one message per turn) and reports the ones to retry as batch item failures;
 * on a schedule's event, the approvals sweep, the turn recovery sweep or key maintenance.
 */
async function worker(event: SQSEvent | ApprovalSweepEvent | TurnRecoveryEvent | KeyMaintenanceEvent, context: Context) {
  if (isApprovalSweepEvent(event)) return sweepApprovals(context);
  if (isKeyMaintenanceEvent(event)) return maintainKeys(context);
  if (isTurnRecoveryEvent(event)) return recoverTurns(context);
  if (!recoveredOnStart) {
    recoveredOnStart = true;
    // A worker that starts after a crash finishes what it can at once; a failure waits for the schedule.
    await recoverTurns(context).catch((error: unknown) => logger.warn("turn recovery sweep failed", { error: errorName(error) }));
  }
  // A retry is expected, not a function error: it must not trip the errors alarm.
  return processPartialResponse(event, runTurn, processor, { context, throwOnFullBatchFailure: false });
}

export const handler = withRuntime(worker);
