import { ChangeMessageVisibilityCommand, SendMessageCommand, type SQSClient } from "@aws-sdk/client-sqs";
import type { TurnJob } from "./turn-job.js";
import { turnJobDeduplicationId, turnJobGroupId, type TurnQueue } from "./turn-queue.js";

export interface SqsTurnQueueOptions {
  /** Created once per container by the caller, and never closed here. */
  client: SQSClient;
  queueUrl: string;
}

/** The turn queue on SQS FIFO: group = conversation, deduplication id = the delivered event. */
export class SqsTurnQueue implements TurnQueue {
  constructor(private readonly options: SqsTurnQueueOptions) {}

  async enqueue(job: TurnJob): Promise<void> {
    await this.options.client.send(
      new SendMessageCommand({
        QueueUrl: this.options.queueUrl,
        MessageBody: JSON.stringify(job),
        MessageGroupId: turnJobGroupId(job),
        MessageDeduplicationId: turnJobDeduplicationId(job),
      }),
    );
  }

  /**
   * Makes a message the worker could not finish visible again after `delaySeconds` instead of
   * after the queue's whole visibility timeout, so a retry (and the rest of its group) waits
   * only as long as the failure calls for.
   */
  async retryAfter(receiptHandle: string, delaySeconds: number): Promise<void> {
    await this.options.client.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: this.options.queueUrl,
        ReceiptHandle: receiptHandle,
        VisibilityTimeout: Math.max(0, Math.round(delaySeconds)),
      }),
    );
  }
}
