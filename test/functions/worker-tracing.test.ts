import { SpanKind } from "@opentelemetry/api";
import { InMemorySpanExporter, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { loadTracingConfig } from "../../lib/config/tracing-config.js";
import { registerLocalTracing, type LocalTracing } from "../../lib/local/tracing.js";
import { lastUserText } from "../support/converse-endpoint.js";
import { jwtClaims, sqsEvent, sqsRecord } from "./support/events.js";
import { startHarness, type Harness } from "./support/harness.js";

/**
 * The Lambda path of one turn, one trace: the api function queues to SQS (the local endpoint),
 * the worker function runs the record. A provider is registered first, as the ADOT layer's
 * wrapper registers one before the handler loads (`tracing=adot`, docs/operations.md "Tracing").
 */
const exporter = new InMemorySpanExporter();
let tracing: LocalTracing | undefined;
let h: Harness;

beforeAll(async () => {
  tracing = registerLocalTracing(loadTracingConfig({}), { exporter });
  h = await startHarness({ converse: { respond: (request) => ({ text: `answer to: ${lastUserText(request)}` }) } });
});
afterAll(async () => {
  await h?.close();
  await tracing?.shutdown();
});

const idOf = (span: ReadableSpan) => span.spanContext().spanId;
const named = (name: string) => exporter.getFinishedSpans().filter((s) => s.name === name);

describe("functions/worker tracing", () => {
  it("continues the api request's trace through the SQS message: POST, send turns, process turns, chat", async () => {
    const alice = jwtClaims("alice");
    const created = await h.api({ method: "POST", path: "/v1/conversations", routeKey: "POST /v1/conversations", claims: alice });
    const before = h.aws.sent.length;
    exporter.reset();
    const accepted = await h.api({
      method: "POST",
      path: `/v1/conversations/${created.json.conversationId}/messages`,
      routeKey: "POST /v1/conversations/{id}/messages",
      claims: alice,
      query: { async: "true" },
      body: { content: "traced question" },
    });
    expect(accepted.status).toBe(202);
    const message = h.aws.sent[before];
    // The context rides in the job body, ids only.
    const job = JSON.parse(message.body) as { trace?: Record<string, string> };
    expect(job.trace?.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    expect(await h.worker(sqsEvent(sqsRecord(message)))).toEqual({ batchItemFailures: [] });

    const [request] = exporter.getFinishedSpans().filter((s) => s.kind === SpanKind.SERVER);
    const [send] = named("send turns");
    const [process] = named("process turns");
    const chats = exporter.getFinishedSpans().filter((s) => s.name.startsWith("chat "));
    expect(send.parentSpanContext?.spanId).toBe(idOf(request));
    expect(send.attributes["messaging.system"]).toBe("aws_sqs");
    expect(process.parentSpanContext?.spanId).toBe(idOf(send));
    expect(process.attributes["messaging.system"]).toBe("aws_sqs");
    expect(chats.map((c) => c.parentSpanContext?.spanId)).toEqual([idOf(process)]);
    const traces = new Set([request, send, process, ...chats].map((s) => s.spanContext().traceId));
    expect(traces.size).toBe(1);
  });
});
