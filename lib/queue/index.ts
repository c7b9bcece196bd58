export {
  DEFAULT_IN_PROCESS_CONCURRENCY,
  InProcessTurnQueue,
  type InProcessDelivery,
  type InProcessJobHandler,
  type InProcessTurnQueueOptions,
} from "./in-process-turn-queue.js";
export {
  DEFAULT_DEDUPLICATION_WINDOW_MS,
  DEFAULT_MONGO_QUEUE_CONCURRENCY,
  DEFAULT_MONGO_QUEUE_POLL_MS,
  MongoTurnQueue,
  TURN_JOB_STATUSES,
  type MongoTurnQueueOptions,
  type TurnJobDocument,
  type TurnJobStatus,
} from "./mongo-turn-queue.js";
export { SqsTurnQueue, type SqsTurnQueueOptions } from "./sqs-turn-queue.js";
export { TurnDispatcher, type DispatchOutcome, type TurnDispatcherOptions } from "./turn-dispatcher.js";
export {
  DEFAULT_BUSY_RETRY_BASE_MS,
  DEFAULT_BUSY_RETRY_MAX_MS,
  DEFAULT_BUSY_RETRY_RESERVE_MS,
  DEFAULT_BUSY_RETRY_WINDOW_MS,
  DEFAULT_RETRY_BASE_SECONDS,
  DEFAULT_RETRY_MAX_SECONDS,
  busyRetryDelayMs,
  queueRetryDelaySeconds,
  type BusyRetryPolicy,
  type BusyRetryState,
} from "./retry-policy.js";
export {
  DEFAULT_REPLY_CLAIM_MS,
  TurnJobWorker,
  type TurnJobOutcome,
  type TurnJobWorkerOptions,
} from "./turn-job-worker.js";
export {
  TURN_METRIC_NAMES,
  TURN_METRICS_NAMESPACE,
  turnMetricsOf,
  type TurnMetrics,
  type TurnMetricsSink,
} from "./turn-metrics.js";
export {
  TURN_CHANNELS,
  parseTurnJob,
  recoveryJobOf,
  turnJobSchema,
  type EnqueueTurn,
  type SlackReplyTarget,
  type SlackTurnJob,
  type TeamsReplyTarget,
  type TeamsTurnJob,
  type TurnChannel,
  type TurnJob,
  type TurnReplier,
} from "./turn-job.js";
export { turnIdForJob, turnJobDeduplicationId, turnJobGroupId, type TurnQueue } from "./turn-queue.js";
