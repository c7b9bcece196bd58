import { Duration } from "aws-cdk-lib";
import { DeduplicationScope, FifoThroughputLimit, Queue, QueueEncryption } from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";

/** How long a dead turn message is kept for inspection and redrive (the SQS maximum). */
export const DEFAULT_DLQ_RETENTION = Duration.days(14);
/** How long an unprocessed turn may wait; a turn older than this is no longer worth answering. */
export const DEFAULT_TURN_RETENTION = Duration.days(1);
/** Lambda's guidance: visibility timeout at least six times the consumer's timeout, so throttled retries fit. */
export const VISIBILITY_TIMEOUTS_PER_WORKER_TIMEOUT = 6;

export interface TurnQueuesProps {
  stage: string;
  workerTimeout: Duration;
  maxReceiveCount: number;
}

/**
 * The FIFO queue of turns (message group = conversation, so turns of one conversation run in
 * order and never concurrently) and its dead-letter queue. Deduplication ids are explicit (the
 * turn id): content-based deduplication would merge two identical questions asked on purpose.
 * Both are encrypted at rest with SQS-managed keys and refuse non-TLS requests.
 */
export class TurnQueues extends Construct {
  readonly queue: Queue;
  readonly deadLetterQueue: Queue;

  constructor(scope: Construct, id: string, props: TurnQueuesProps) {
    super(scope, id);
    this.deadLetterQueue = new Queue(this, "DeadLetters", {
      queueName: `${props.stage}-threadwise-turns-dlq.fifo`,
      fifo: true,
      contentBasedDeduplication: false,
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: DEFAULT_DLQ_RETENTION,
    });
    this.queue = new Queue(this, "Turns", {
      queueName: `${props.stage}-threadwise-turns.fifo`,
      fifo: true,
      contentBasedDeduplication: false,
      // High-throughput FIFO: ordering and deduplication per conversation, not across the queue.
      deduplicationScope: DeduplicationScope.MESSAGE_GROUP,
      fifoThroughputLimit: FifoThroughputLimit.PER_MESSAGE_GROUP_ID,
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: DEFAULT_TURN_RETENTION,
      visibilityTimeout: Duration.seconds(props.workerTimeout.toSeconds() * VISIBILITY_TIMEOUTS_PER_WORKER_TIMEOUT),
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: props.maxReceiveCount },
    });
  }
}
