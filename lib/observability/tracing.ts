import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Link,
  type Span,
  type SpanOptions,
} from "@opentelemetry/api";

/**
 * One turn, one trace (docs/operations.md, "Tracing"): spans for the request, the queue hop, each
 * model call and each tool call, named and attributed by OpenTelemetry's semantic conventions.
 * Only `@opentelemetry/api` is used here, a no-op until an adapter registers a provider: the ADOT
 * Lambda layer in AWS (the stack's `tracing` context key), `lib/local/tracing.ts` locally, an
 * in-memory exporter in the tests. No span carries a message's contents, a tool's arguments or
 * its output: names, ids and numbers only.
 *
 * Attribute names, from the GenAI conventions ("Semantic conventions for generative client AI
 * spans", https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/, now kept in
 * open-telemetry/semantic-conventions-genai `docs/gen-ai/gen-ai-spans.md` and
 * `docs/registry/attributes/gen-ai.md` at 002c8a6, status Development), the AWS Bedrock page
 * (`gen_ai.provider.name` MUST be `aws.bedrock`; `gen_ai.system` is deprecated for it), and the
 * core conventions v1.41 for HTTP, messaging and `error.type`.
 */
export const SEMCONV_ATTRIBUTES = {
  /** Required on every GenAI span: `chat`, `execute_tool`. */
  genAiOperationName: "gen_ai.operation.name",
  /** Required on inference spans: `aws.bedrock`, `openai`, or this product's own value for the offline model. */
  genAiProviderName: "gen_ai.provider.name",
  genAiRequestModel: "gen_ai.request.model",
  genAiRequestMaxTokens: "gen_ai.request.max_tokens",
  genAiRequestTemperature: "gen_ai.request.temperature",
  genAiRequestStream: "gen_ai.request.stream",
  genAiResponseFinishReasons: "gen_ai.response.finish_reasons",
  /** Every input token, those read from and written to the cache included (the conventions' note [16]). */
  genAiUsageInputTokens: "gen_ai.usage.input_tokens",
  genAiUsageOutputTokens: "gen_ai.usage.output_tokens",
  genAiUsageCacheReadInputTokens: "gen_ai.usage.cache_read.input_tokens",
  genAiUsageCacheCreationInputTokens: "gen_ai.usage.cache_creation.input_tokens",
  genAiConversationId: "gen_ai.conversation.id",
  genAiToolName: "gen_ai.tool.name",
  genAiToolCallId: "gen_ai.tool.call.id",
  /** A low-cardinality class of the error a span ended with: the exception's name, never its message. */
  errorType: "error.type",
  httpRequestMethod: "http.request.method",
  httpResponseStatusCode: "http.response.status_code",
  urlPath: "url.path",
  messagingSystem: "messaging.system",
  messagingOperationName: "messaging.operation.name",
  messagingOperationType: "messaging.operation.type",
  messagingDestinationName: "messaging.destination.name",
} as const;

const A = SEMCONV_ATTRIBUTES;

/** The instrumentation scope of every span of the product. */
export const TRACER_NAME = "threadwise";

/** `gen_ai.provider.name` by the product's model provider (`MODEL_PROVIDER`); the offline model gets a custom value, as the conventions allow. */
export const GEN_AI_PROVIDER_NAMES = { bedrock: "aws.bedrock", "openai-compatible": "openai", local: "threadwise.local" } as const;

/** `messaging.system` of the turn queues: SQS's well-known value, and custom ones for the local server's. */
export const MESSAGING_SYSTEMS = { sqs: "aws_sqs", mongodb: "threadwise.mongodb_queue", inProcess: "threadwise.in_process_queue" } as const;

/** The logical name of the turn queue, as `messaging.destination.name` and in the hop's span names. */
export const TURN_QUEUE_DESTINATION = "turns";

/** What the queue hop writes into a job so the consumer's spans continue the producer's trace (W3C `traceparent`, or what the registered propagator writes). */
export type TraceCarrier = Record<string, string>;

const tracer = () => trace.getTracer(TRACER_NAME);

const errorName = (error: unknown): string => (error instanceof Error ? error.name : "_OTHER");

/** Marks a span failed with the error's class name only (an error's message can quote a request). */
export function recordSpanError(span: Span, type: string): void {
  span.setAttribute(A.errorType, type);
  span.setStatus({ code: SpanStatusCode.ERROR });
}

/** Runs `fn` inside a new active span, ending it after `fn` settles; a thrown error marks it failed and is rethrown. */
async function inSpan<T>(name: string, options: SpanOptions, fn: (span: Span) => Promise<T>, parent = context.active()): Promise<T> {
  return tracer().startActiveSpan(name, options, parent, async (span) => {
    try {
      return await fn(span);
    } catch (error) {
      recordSpanError(span, errorName(error));
      throw error;
    } finally {
      span.end();
    }
  });
}

/** An HTTP request served by the API (`lib/api/http-handler.ts`): the trace's root, or a child of the Lambda invocation's span. */
export async function traceRequest<T extends { status: number }>(request: { method: string; path: string }, fn: () => Promise<T>): Promise<T> {
  const attributes = { [A.httpRequestMethod]: request.method, [A.urlPath]: request.path };
  return inSpan(request.method, { kind: SpanKind.SERVER, attributes }, async (span) => {
    const response = await fn();
    span.setAttribute(A.httpResponseStatusCode, response.status);
    if (response.status >= 500) recordSpanError(span, String(response.status));
    return response;
  });
}

export interface QueueHop {
  /** One of {@link MESSAGING_SYSTEMS}. */
  system: string;
  /** Default: {@link TURN_QUEUE_DESTINATION}. */
  destination?: string;
}

const hopAttributes = (hop: QueueHop, operation: "send" | "process"): Attributes => ({
  [A.messagingSystem]: hop.system,
  [A.messagingOperationName]: operation,
  [A.messagingOperationType]: operation,
  [A.messagingDestinationName]: hop.destination ?? TURN_QUEUE_DESTINATION,
});

/**
 * The producer side of the queue hop: a `send turns` span, and the carrier of its context for the
 * message (`send` puts it in the job), so the worker's spans join this trace.
 */
export async function withProducerSpan<T>(hop: QueueHop, send: (carrier: TraceCarrier | undefined) => Promise<T>): Promise<T> {
  const name = `send ${hop.destination ?? TURN_QUEUE_DESTINATION}`;
  return inSpan(name, { kind: SpanKind.PRODUCER, attributes: hopAttributes(hop, "send") }, async () => {
    const carrier: TraceCarrier = {};
    propagation.inject(context.active(), carrier);
    return send(Object.keys(carrier).length > 0 ? carrier : undefined);
  });
}

/**
 * The consumer side: a `process turns` span whose parent is the producer's context from the
 * message (so the turn's model and tool spans are in the request's trace), linked to the span
 * active here (the Lambda invocation's) when there is one.
 */
export async function withConsumerSpan<T>(hop: QueueHop, carrier: TraceCarrier | undefined, fn: () => Promise<T>): Promise<T> {
  const here = trace.getActiveSpan()?.spanContext();
  const parent = carrier ? propagation.extract(ROOT_CONTEXT, carrier) : context.active();
  const links: Link[] = here && carrier ? [{ context: here }] : [];
  const name = `process ${hop.destination ?? TURN_QUEUE_DESTINATION}`;
  return inSpan(name, { kind: SpanKind.CONSUMER, attributes: hopAttributes(hop, "process"), links }, () => fn(), parent);
}

export interface ModelCallSpan {
  /** {@link GEN_AI_PROVIDER_NAMES}. */
  provider: string;
  /** The model or inference profile id. */
  model: string;
  conversationId: string;
  maxTokens?: number;
  temperature?: number;
  stream: boolean;
}

/** What a model's answer tells its span: token counts and why it stopped (never its text). */
export interface ModelCallResult {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
  finishReasons: string[];
}

/** One model call: a `chat <model>` CLIENT span with the request's settings and the answer's usage. */
export async function traceModelCall<T>(call: ModelCallSpan, fn: () => Promise<T>, resultOf: (response: T) => ModelCallResult): Promise<T> {
  const attributes: Attributes = {
    [A.genAiOperationName]: "chat",
    [A.genAiProviderName]: call.provider,
    [A.genAiRequestModel]: call.model,
    [A.genAiConversationId]: call.conversationId,
    [A.genAiRequestStream]: call.stream,
    ...(call.maxTokens !== undefined && { [A.genAiRequestMaxTokens]: call.maxTokens }),
    ...(call.temperature !== undefined && { [A.genAiRequestTemperature]: call.temperature }),
  };
  return inSpan(`chat ${call.model}`, { kind: SpanKind.CLIENT, attributes }, async (span) => {
    const response = await fn();
    const result = resultOf(response);
    span.setAttributes({
      [A.genAiUsageInputTokens]: result.inputTokens,
      [A.genAiUsageOutputTokens]: result.outputTokens,
      ...(result.cacheReadTokens !== undefined && { [A.genAiUsageCacheReadInputTokens]: result.cacheReadTokens }),
      ...(result.cacheWriteTokens !== undefined && { [A.genAiUsageCacheCreationInputTokens]: result.cacheWriteTokens }),
      ...(result.finishReasons.length > 0 && { [A.genAiResponseFinishReasons]: result.finishReasons }),
    });
    return response;
  });
}

/**
 * One tool call: an `execute_tool <name>` INTERNAL span. A call that ends as an error result (the
 * model reads it) marks the span failed with `error.type` `tool_error`; its output stays off the span.
 */
export async function traceToolCall<T>(
  call: { name: string; id: string; conversationId: string },
  fn: () => Promise<T>,
  failed: (result: T) => boolean,
): Promise<T> {
  const attributes: Attributes = {
    [A.genAiOperationName]: "execute_tool",
    [A.genAiToolName]: call.name,
    [A.genAiToolCallId]: call.id,
    [A.genAiConversationId]: call.conversationId,
  };
  return inSpan(`execute_tool ${call.name}`, { kind: SpanKind.INTERNAL, attributes }, async (span) => {
    const result = await fn();
    if (failed(result)) recordSpanError(span, "tool_error");
    return result;
  });
}
