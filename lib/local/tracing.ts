import { context, propagation, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BasicTracerProvider, BatchSpanProcessor, ConsoleSpanExporter, SimpleSpanProcessor, type SpanExporter } from "@opentelemetry/sdk-trace-base";
import type { TracingConfig } from "../config/tracing-config.js";

/** The OTLP/HTTP path of traces under a collector's base URL (the OTel exporter specification's `/v1/traces`). */
const OTLP_TRACES_PATH = "/v1/traces";

export interface LocalTracing {
  /** Exports what is buffered, then unregisters the provider: the API is a no-op again. */
  shutdown(): Promise<void>;
}

/**
 * Registers the OpenTelemetry SDK for local mode, so the spans of `lib/observability/tracing.ts`
 * go somewhere: the console (each span printed as it ends) or an OTLP/HTTP endpoint (batched),
 * by `TRACING_EXPORTER`; `exporter` (tests: an in-memory one) takes the place of either. Context
 * follows async calls (AsyncLocalStorage) and crosses the queue hop as W3C `traceparent`. Never
 * loaded by the Lambda bundles: there the ADOT layer brings its own SDK (docs/bundling.md).
 * Returns undefined, registering nothing, when tracing is off.
 */
export function registerLocalTracing(config: TracingConfig, options: { exporter?: SpanExporter } = {}): LocalTracing | undefined {
  if (config.exporter === "none" && !options.exporter) return undefined;
  const processor = options.exporter
    ? new SimpleSpanProcessor(options.exporter)
    : config.exporter === "console"
      ? new SimpleSpanProcessor(new ConsoleSpanExporter())
      : new BatchSpanProcessor(new OTLPTraceExporter({ url: `${config.otlpEndpoint.replace(/\/+$/, "")}${OTLP_TRACES_PATH}` }));
  const provider = new BasicTracerProvider({ resource: resourceFromAttributes({ "service.name": config.serviceName }), spanProcessors: [processor] });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  return {
    async shutdown() {
      await provider.shutdown();
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
}
