import { Duration, type RemovalPolicy } from "aws-cdk-lib";
import { Key } from "aws-cdk-lib/aws-kms";
import { DeduplicationScope, FifoThroughputLimit, Queue, QueueEncryption } from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";

/** How long a dead turn message is kept for inspection and redrive (the SQS maximum). */
export const DEFAULT_DLQ_RETENTION = Duration.days(14);
/**
 * How long an unprocessed turn may wait: the SQS maximum, as the dead-letter queue's. A message
 * that expires is deleted without reaching the dead-letter queue, so a backlog must never get
 * there; the oldest-turn alarm fires after minutes (docs/operations.md, "Oldest queued turn").
 */
export const DEFAULT_TURN_RETENTION = Duration.days(14);
/**
 * What the turn queue's visibility timeout adds to the worker's timeout: time for the poller to
 * hand a received message to a worker. Lambda's general advice (six times the timeout) covers a
 * poller throttled by the function's concurrency; here the event source's maximum concurrency is
 * at most the worker's reserved concurrency, so it is not throttled, and a crashed or timed-out
 * worker holds its conversation one timeout and this margin, not six timeouts (docs/operations.md,
 * "Queue timing").
 */
export const VISIBILITY_TIMEOUT_MARGIN = Duration.seconds(60);

/** The turn queue's visibility timeout for a worker of this timeout. */
export function visibilityTimeoutFor(workerTimeout: Duration): Duration {
  return Duration.seconds(workerTimeout.toSeconds() + VISIBILITY_TIMEOUT_MARGIN.toSeconds());
}

export interface TurnQueuesProps {
  stage: string;
  workerTimeout: Duration;
  maxReceiveCount: number;
  /** RETAIN in prod: deleting the stack must not delete queued turns or the dead letters awaiting a redrive. */
  removalPolicy: RemovalPolicy;
}

/**
 * The FIFO queue of turns (message group = conversation, so turns of one conversation run in
 * order and never concurrently) and its dead-letter queue. Deduplication ids are explicit (the
 * turn id): content-based deduplication would merge two identical questions asked on purpose.
 * Both refuse non-TLS requests and are encrypted at rest with a customer managed KMS key of their own
 * (rotated yearly, kept with a retained stage's queues): a job holds its question's text, and the key's
 * use is granted only with the queue grants (`grantSendMessages`, the worker's event source), so only
 * the functions that send or receive turns can read a message, and CloudTrail logs each data key they use
 * (docs/security.md, "The turn queue").
 */
export class TurnQueues extends Construct {
  readonly queue: Queue;
  readonly deadLetterQueue: Queue;
  readonly key: Key;

  constructor(scope: Construct, id: string, props: TurnQueuesProps) {
    super(scope, id);
    this.key = new Key(this, "Key", {
      description: `Threadwise ${props.stage}: the turn queue and its dead-letter queue (queued questions)`,
      enableKeyRotation: true,
      removalPolicy: props.removalPolicy,
    });
    this.deadLetterQueue = new Queue(this, "DeadLetters", {
      queueName: `${props.stage}-threadwise-turns-dlq.fifo`,
      fifo: true,
      contentBasedDeduplication: false,
      encryption: QueueEncryption.KMS,
      encryptionMasterKey: this.key,
      enforceSSL: true,
      retentionPeriod: DEFAULT_DLQ_RETENTION,
      removalPolicy: props.removalPolicy,
    });
    this.queue = new Queue(this, "Turns", {
      queueName: `${props.stage}-threadwise-turns.fifo`,
      fifo: true,
      contentBasedDeduplication: false,
      // High-throughput FIFO: ordering and deduplication per conversation, not across the queue.
      deduplicationScope: DeduplicationScope.MESSAGE_GROUP,
      fifoThroughputLimit: FifoThroughputLimit.PER_MESSAGE_GROUP_ID,
      encryption: QueueEncryption.KMS,
      encryptionMasterKey: this.key,
      enforceSSL: true,
      retentionPeriod: DEFAULT_TURN_RETENTION,
      visibilityTimeout: visibilityTimeoutFor(props.workerTimeout),
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: props.maxReceiveCount },
      removalPolicy: props.removalPolicy,
    });
  }
}
