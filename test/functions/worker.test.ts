import { DEFAULT_TURN_MAX_RECEIVES } from "../../lib/config/deployment-config.js";
import { DEFAULT_RETRY_BASE_SECONDS } from "../../lib/queue/index.js";
import { lastUserText } from "../support/converse-endpoint.js";
import { jwtClaims, sqsEvent, sqsRecord } from "./support/events.js";
import { emfOf } from "./support/emf.js";
import { startHarness, type Harness } from "./support/harness.js";
import type { SentMessage } from "./support/aws-endpoints.js";

let h: Harness;
const alice = jwtClaims("alice");

beforeAll(async () => {
  h = await startHarness({
    converse: {
      respond: (request) => {
        const text = lastUserText(request);
        if (text.includes("reject")) return { error: { status: 400, type: "ValidationException", message: "The model rejected the request." } };
        if (text.includes("deny"))
          return { error: { status: 403, type: "AccessDeniedException", message: "You don't have access to the model with the specified model ID." } };
        if (text.includes("break")) return { error: { status: 500, type: "InternalServerException", message: "The model failed." } };
        return { text: `answer to: ${text}` };
      },
    },
  });
});
afterAll(async () => h?.close());

/** Posts an async turn and returns its queue message. */
async function queuedTurn(content: string): Promise<{ conversationId: string; turnId: string; message: SentMessage }> {
  const created = await h.api({ method: "POST", path: "/v1/conversations", routeKey: "POST /v1/conversations", claims: alice });
  const conversationId = created.json.conversationId as string;
  const before = h.aws.sent.length;
  const accepted = await h.api({
    method: "POST",
    path: `/v1/conversations/${conversationId}/messages`,
    routeKey: "POST /v1/conversations/{id}/messages",
    claims: alice,
    query: { async: "true" },
    body: { content },
  });
  expect(accepted.status).toBe(202);
  return { conversationId, turnId: accepted.json.turnId, message: h.aws.sent[before] };
}

const turnOf = (conversationId: string, turnId: string) =>
  h.api({ method: "GET", path: `/v1/conversations/${conversationId}/turns/${turnId}`, routeKey: "GET /v1/conversations/{id}/turns/{turnId}", claims: alice });

describe("functions/worker", () => {
  describe("handler", () => {
    it("returns no failures and completes the turn", async () => {
      const { conversationId, turnId, message } = await queuedTurn("first question");
      const result = await h.worker(sqsEvent(sqsRecord(message)));
      expect(result).toEqual({ batchItemFailures: [] });
      expect((await turnOf(conversationId, turnId)).json).toMatchObject({ status: "completed", answer: "answer to: first question" });
    });

    it("does not run the turn again when the queue delivers the same message twice", async () => {
      const { conversationId, message } = await queuedTurn("asked once");
      await h.worker(sqsEvent(sqsRecord(message, 1)));
      const modelCalls = h.converse.requests.length;
      const again = await h.worker(sqsEvent(sqsRecord(message, 2)));
      expect(again.batchItemFailures).toEqual([]);
      expect(h.converse.requests.length).toBe(modelCalls);
      const record = await h.api({
        method: "GET",
        path: `/v1/conversations/${conversationId}/messages`,
        routeKey: "GET /v1/conversations/{id}/messages",
        claims: alice,
      });
      expect(record.json.messages).toHaveLength(2);
    });

    it("returns the message as a failure, due back after a backoff, while another turn holds the conversation", async () => {
      const { conversationId, message } = await queuedTurn("wait for the lease");
      await h.database.db
        .collection<{ _id: string }>("conversations")
        .updateOne({ _id: conversationId }, { $set: { lease: { holder: "another-turn", expiresAt: new Date(Date.now() + 60_000) } } });
      const record = sqsRecord(message);
      const result = await h.worker(sqsEvent(record));
      expect(result.batchItemFailures).toEqual([{ itemIdentifier: message.messageId }]);
      const change = h.aws.visibilityChanges.find((c) => c.receiptHandle === record.receiptHandle);
      // The backoff with up to a fifth of jitter.
      expect(change?.visibilityTimeout).toBeGreaterThanOrEqual(DEFAULT_RETRY_BASE_SECONDS);
      expect(change?.visibilityTimeout).toBeLessThanOrEqual(DEFAULT_RETRY_BASE_SECONDS * 1.2);
    });

    it("returns a failing turn for a retry, backing off, before its last receive", async () => {
      const { message } = await queuedTurn("please break");
      const record = sqsRecord(message, 2);
      const result = await h.worker(sqsEvent(record));
      expect(result.batchItemFailures).toEqual([{ itemIdentifier: message.messageId }]);
      const delay = h.aws.visibilityChanges.find((c) => c.receiptHandle === record.receiptHandle)?.visibilityTimeout;
      expect(delay).toBeGreaterThanOrEqual(DEFAULT_RETRY_BASE_SECONDS * 2);
      expect(delay).toBeLessThanOrEqual(DEFAULT_RETRY_BASE_SECONDS * 2.4);
    });

    it("returns no failure on the first receive when the model refuses the request (4xx), and records the turn as failed", async () => {
      const { conversationId, turnId, message } = await queuedTurn("please reject this");
      const result = await h.worker(sqsEvent(sqsRecord(message, 1)));
      expect(result.batchItemFailures).toEqual([]);
      expect((await turnOf(conversationId, turnId)).json).toMatchObject({ status: "failed", error: { code: "model_invalid_request" } });
    });

    it("returns no failure on the last receive of a failing turn, and records the turn as failed", async () => {
      const { conversationId, turnId, message } = await queuedTurn("please break again");
      const result = await h.worker(sqsEvent(sqsRecord(message, DEFAULT_TURN_MAX_RECEIVES)));
      expect(result.batchItemFailures).toEqual([]);
      expect((await turnOf(conversationId, turnId)).json.status).toBe("failed");
    });

    it("drops a message that is not a turn job instead of retrying it", async () => {
      const poison = { ...h.aws.sent[0], messageId: "poison-1", body: JSON.stringify({ hello: "world" }) };
      const result = await h.worker(sqsEvent(sqsRecord(poison)));
      expect(result.batchItemFailures).toEqual([]);
    });

    it("publishes a turn given up and failed, by reason, when the model denies access", async () => {
      const { message } = await queuedTurn("please deny me");
      const emf = await emfOf(() => h.worker(sqsEvent(sqsRecord(message, 1))));
      const counted = (name: string) => emf.filter((l) => name in l).map((l) => ({ reason: l.reason, value: l[name] }));
      expect(counted("TurnsGivenUp")).toEqual([
        { reason: "model_denied", value: 1 },
        { reason: undefined, value: 1 },
      ]);
      expect(counted("TurnsFailed")).toEqual([
        { reason: "model_denied", value: 1 },
        { reason: undefined, value: 1 },
      ]);
      expect(counted("TurnsRetried")).toEqual([]);
    });

    it("publishes a turn given up for a reason a deploy can cause under the function's version, for the canary's rollback alarm", async () => {
      const { message } = await queuedTurn("please deny me, versioned");
      const emf = await emfOf(() => h.worker(sqsEvent(sqsRecord(message, 1))));
      const versioned = emf.filter((l) => "VersionTurnsFailed" in l);
      expect(versioned).toEqual([expect.objectContaining({ function: expect.stringMatching(/worker/), version: "$LATEST", VersionTurnsFailed: 1 })]);
    });

    it("publishes a retried turn, by reason, before its last receive", async () => {
      const { message } = await queuedTurn("please break, once more");
      const emf = await emfOf(() => h.worker(sqsEvent(sqsRecord(message, 1))));
      expect(emf.filter((l) => "TurnsRetried" in l).map((l) => l.reason)).toEqual(["model_error", undefined]);
      expect(emf.filter((l) => "TurnsFailed" in l)).toEqual([]);
    });

    it("carries the API request's id to the worker as the message's correlation id, and no trace header outside Lambda", async () => {
      const created = await h.api({ method: "POST", path: "/v1/conversations", routeKey: "POST /v1/conversations", claims: alice });
      const before = h.aws.sent.length;
      const accepted = await h.api({
        method: "POST",
        path: `/v1/conversations/${created.json.conversationId}/messages`,
        routeKey: "POST /v1/conversations/{id}/messages",
        claims: alice,
        query: { async: "true" },
        body: { content: "correlate me" },
        requestId: "req-correlated-1",
      });
      expect(accepted.status).toBe(202);
      expect(h.aws.sent[before]).toMatchObject({ attributes: { correlationId: "req-correlated-1" }, traceHeader: undefined });
    });

    it("publishes the per-turn metrics as CloudWatch EMF in the Threadwise namespace", async () => {
      const { message } = await queuedTurn("measure me");
      const lines: string[] = [];
      const spy = vi.spyOn(console, "log").mockImplementation((line: unknown) => void lines.push(String(line)));
      try {
        await h.worker(sqsEvent(sqsRecord(message)));
      } finally {
        spy.mockRestore();
      }
      const emf = lines.map((l) => JSON.parse(l) as Record<string, any>).find((l) => l._aws?.CloudWatchMetrics);
      expect(emf?._aws.CloudWatchMetrics[0].Namespace).toBe("Threadwise");
      const names = emf?._aws.CloudWatchMetrics[0].Metrics.map((m: { Name: string }) => m.Name);
      expect(names).toEqual(
        expect.arrayContaining([
          "StateTokens",
          "ViewTokens",
          "InputTokens",
          "OutputTokens",
          "CacheReadInputTokens",
          "CacheWriteInputTokens",
          "CostUsd",
          "ToolCalls",
          "TurnDurationMs",
          "OmittedOutputs",
        ]),
      );
      expect(emf?.CostUsd).toBeGreaterThan(0);
      expect(emf?.InputTokens).toBeGreaterThan(0);
      expect(emf?.service).toBe("threadwise-test");
    });
  });
});
