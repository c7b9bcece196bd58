import { ChangeMessageVisibilityCommand, SendMessageCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { CORRELATION_ID_ATTRIBUTE, MESSAGING_SYSTEMS, withProducerSpan, type TraceContext } from "../observability/index.js";
import type { TurnJob } from "./turn-job.js";
import { turnJobDeduplicationId, turnJobGroupId, type TurnQueue } from "./turn-queue.js";

/**
 * The characters SQS refuses in a message body (InvalidMessageContents) that `JSON.stringify` leaves
 * raw: it escapes controls and lone surrogates already, not the noncharacters U+FFFE and U+FFFF.
 */
const RAW_NONCHARACTERS = /[\ufffe\uffff]/g;

/** The job as the message body: JSON whose every character SQS takes, parsing back to the same job (a user's text may hold anything). */
function turnJobMessageBody(job: TurnJob): string {
  return JSON.stringify(job).replace(RAW_NONCHARACTERS, (c) => `\\u${c.charCodeAt(0).toString(16)}`);
}

export interface SqsTurnQueueOptions {
  /** Created once per container by the caller, and never closed here. */
  client: SQSClient;
  queueUrl: string;
  /** Called once per job the queue accepted (the queued-turn metric). */
  onEnqueued?: () => void;
  /** The trace and correlation id of the request that enqueues, carried by the message to the worker. Default: none. */
  traceContext?: () => TraceContext;
}

/**
 * The turn queue on SQS FIFO: group = conversation, deduplication id = the delivered event. The
 * enqueuing request's correlation id travels as a message attribute and its X-Ray trace header as
 * the `AWSTraceHeader` system attribute, so the worker's turn continues the request's trace.
 */
export class SqsTurnQueue implements TurnQueue {
  constructor(private readonly options: SqsTurnQueueOptions) {}

  async enqueue(job: TurnJob): Promise<void> {
    // The OpenTelemetry context rides in the body (the job's `trace`), the X-Ray header beside it.
    await withProducerSpan({ system: MESSAGING_SYSTEMS.sqs }, (carrier) => this.send(carrier ? { ...job, trace: carrier } : job));
    this.options.onEnqueued?.();
  }

  private async send(job: TurnJob): Promise<void> {
    const trace = this.options.traceContext?.() ?? {};
    await this.options.client.send(
      new SendMessageCommand({
        QueueUrl: this.options.queueUrl,
        MessageBody: turnJobMessageBody(job),
        MessageGroupId: turnJobGroupId(job),
        MessageDeduplicationId: turnJobDeduplicationId(job),
        ...(trace.correlationId && { MessageAttributes: { [CORRELATION_ID_ATTRIBUTE]: { DataType: "String", StringValue: trace.correlationId } } }),
        ...(trace.traceHeader && { MessageSystemAttributes: { AWSTraceHeader: { DataType: "String", StringValue: trace.traceHeader } } }),
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
