import { createHash } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { SQSClient } from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { CORRELATION_ID_ATTRIBUTE } from "../../lib/observability/trace-context.js";
import { SqsTurnQueue } from "../../lib/queue/sqs-turn-queue.js";
import { parseTurnJob } from "../../lib/queue/turn-job.js";
import { turnJobDeduplicationId, turnJobGroupId } from "../../lib/queue/turn-queue.js";
import { sampleSlackJob } from "../support/turn-jobs.js";
import { OUTSIDE_SQS_CHARACTERS } from "../functions/support/aws-endpoints.js";
import { describeTurnQueueContract } from "./turn-queue-contract.js";

/** SQS's JSON protocol on loopback: each request's action and body recorded, answered as SQS answers. */
let sqs: Server;
let client: SQSClient;
const received: { action: string; body: Record<string, unknown> }[] = [];
const QUEUE_URL = "https://sqs.us-east-1.amazonaws.com/123456789012/threadwise-turns.fifo";

beforeAll(async () => {
  sqs = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const action = String(req.headers["x-amz-target"] ?? "").replace("AmazonSQS.", "");
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>;
      received.push({ action, body });
      if (action === "SendMessage" && OUTSIDE_SQS_CHARACTERS.test(String(body.MessageBody))) {
        const refusal = { __type: "com.amazonaws.sqs#InvalidMessageContents", message: "Invalid characters found." };
        res.writeHead(400, { "content-type": "application/x-amz-json-1.0" }).end(JSON.stringify(refusal));
        return;
      }
      const answer =
        action === "SendMessage"
          ? { MessageId: "m-1", MD5OfMessageBody: createHash("md5").update(String(body.MessageBody)).digest("hex"), SequenceNumber: "1" }
          : {};
      res.writeHead(200, { "content-type": "application/x-amz-json-1.0" }).end(JSON.stringify(answer));
    });
  });
  await new Promise<void>((resolve) => sqs.listen(0, "127.0.0.1", resolve));
  const endpoint = `http://127.0.0.1:${(sqs.address() as AddressInfo).port}`;
  client = new SQSClient({ endpoint, region: "us-east-1", credentials: { accessKeyId: "AKIDLOCALTEST", secretAccessKey: "local" }, maxAttempts: 1 });
});
afterAll(async () => {
  client.destroy();
  await new Promise((resolve) => sqs.close(resolve));
});
beforeEach(() => {
  received.length = 0;
});

const job = sampleSlackJob();

describe("SqsTurnQueue", () => {
  describe("enqueue", () => {
    it("sends the job to the FIFO queue, grouped by conversation and deduplicated by event, and counts it", async () => {
      let enqueued = 0;
      await new SqsTurnQueue({ client, queueUrl: QUEUE_URL, onEnqueued: () => enqueued++ }).enqueue(job);
      expect(received).toEqual([
        {
          action: "SendMessage",
          body: {
            QueueUrl: QUEUE_URL,
            MessageBody: JSON.stringify(job),
            MessageGroupId: turnJobGroupId(job),
            MessageDeduplicationId: turnJobDeduplicationId(job),
          },
        },
      ]);
      expect(enqueued).toBe(1);
    });

    it("carries the request's correlation id as a message attribute and its trace header as AWSTraceHeader", async () => {
      const traceContext = () => ({ correlationId: "req-1", traceHeader: "Root=1-a-b;Sampled=1" });
      await new SqsTurnQueue({ client, queueUrl: QUEUE_URL, traceContext }).enqueue(job);
      expect(received[0].body).toMatchObject({
        MessageAttributes: { [CORRELATION_ID_ATTRIBUTE]: { DataType: "String", StringValue: "req-1" } },
        MessageSystemAttributes: { AWSTraceHeader: { DataType: "String", StringValue: "Root=1-a-b;Sampled=1" } },
      });
    });

    it("sends a text holding U+FFFE and U+FFFF, which SQS refuses raw, escaped in the JSON, so the worker reads it unchanged", async () => {
      const content = "sales\ufffe by\uffff region \ud83d\udc4d \ud800 \u0000";
      await new SqsTurnQueue({ client, queueUrl: QUEUE_URL }).enqueue(sampleSlackJob({ content }));
      const body = String(received[0].body.MessageBody);
      expect(body).not.toMatch(OUTSIDE_SQS_CHARACTERS);
      expect(parseTurnJob(body).content).toBe(content);
    });

    it("counts nothing when SQS refuses the job", async () => {
      let enqueued = 0;
      const refusing = new SQSClient({
        endpoint: "http://127.0.0.1:1",
        region: "us-east-1",
        credentials: { accessKeyId: "a", secretAccessKey: "b" },
        maxAttempts: 1,
      });
      await expect(new SqsTurnQueue({ client: refusing, queueUrl: QUEUE_URL, onEnqueued: () => enqueued++ }).enqueue(job)).rejects.toThrow();
      expect(enqueued).toBe(0);
      refusing.destroy();
    });
  });

  describe("retryAfter", () => {
    it("makes the message visible again after the delay, in whole seconds and never below 0", async () => {
      const queue = new SqsTurnQueue({ client, queueUrl: QUEUE_URL });
      await queue.retryAfter("receipt-1", 7.4);
      await queue.retryAfter("receipt-2", -3);
      expect(received.map((r) => [r.action, r.body.ReceiptHandle, r.body.VisibilityTimeout])).toEqual([
        ["ChangeMessageVisibility", "receipt-1", 7],
        ["ChangeMessageVisibility", "receipt-2", 0],
      ]);
    });
  });
});

describeTurnQueueContract("SqsTurnQueue", async () => {
  received.length = 0;
  return {
    queue: new SqsTurnQueue({ client, queueUrl: QUEUE_URL }),
    sent: async () =>
      received
        .filter((r) => r.action === "SendMessage")
        .map((r) => ({
          job: parseTurnJob(String(r.body.MessageBody)),
          group: String(r.body.MessageGroupId),
          deduplicationId: String(r.body.MessageDeduplicationId),
        })),
  };
});
