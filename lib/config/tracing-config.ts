import { z } from "zod";
import { parseOrThrow } from "../validation.js";
import { envSchemaOf, setting, withDefaults } from "./settings.js";

/** Where the local server sends its OpenTelemetry spans: nowhere, the console, or an OTLP endpoint (docs/operations.md, "Tracing"). */
export const TRACING_EXPORTERS = ["none", "console", "otlp"] as const;
export type TracingExporter = (typeof TRACING_EXPORTERS)[number];

/** The local server exports no spans unless asked: the OpenTelemetry API stays a no-op. */
export const DEFAULT_TRACING_EXPORTER: TracingExporter = "none";
/** The OTLP/HTTP endpoint of a collector on this machine (Jaeger, the OpenTelemetry Collector), as the OTel SDKs default to. */
export const DEFAULT_OTLP_ENDPOINT = "http://localhost:4318";
/** `service.name` of the spans the local server exports. */
export const DEFAULT_TRACING_SERVICE_NAME = "threadwise";

/**
 * The tracing settings of local mode, defined once (see `settings.ts`). In AWS the ADOT Lambda
 * layer or X-Ray exports the spans (the stack's `tracing` context key), and these are not read.
 */
export const TRACING_SETTINGS = {
  TRACING_EXPORTER: setting({
    schema: z.enum(TRACING_EXPORTERS),
    default: DEFAULT_TRACING_EXPORTER,
    description: "local mode: `console` prints each span, `otlp` sends them to `OTEL_EXPORTER_OTLP_ENDPOINT` ([Tracing](operations.md#tracing))",
  }),
  OTEL_EXPORTER_OTLP_ENDPOINT: setting({
    schema: z.url(),
    default: DEFAULT_OTLP_ENDPOINT,
    description: "with `TRACING_EXPORTER=otlp`: the collector's OTLP/HTTP base URL (spans go to `/v1/traces`), the standard OTel variable",
  }),
  OTEL_SERVICE_NAME: setting({
    schema: z.string().min(1),
    default: DEFAULT_TRACING_SERVICE_NAME,
    description: "`service.name` of the exported spans, the standard OTel variable",
  }),
};

const envSchema = envSchemaOf(TRACING_SETTINGS);

/** How local mode exports the spans of `lib/observability/tracing.ts`. */
export interface TracingConfig {
  /** Default: `none` ({@link DEFAULT_TRACING_EXPORTER}). */
  exporter: TracingExporter;
  /** OTLP/HTTP base URL; spans are posted to `${otlpEndpoint}/v1/traces`. Default: {@link DEFAULT_OTLP_ENDPOINT}. */
  otlpEndpoint: string;
  /** Default: {@link DEFAULT_TRACING_SERVICE_NAME}. */
  serviceName: string;
}

export function loadTracingConfig(env: Record<string, string | undefined>): TracingConfig {
  const e = withDefaults(TRACING_SETTINGS, parseOrThrow(envSchema, env, "invalid configuration"));
  return { exporter: e.TRACING_EXPORTER, otlpEndpoint: e.OTEL_EXPORTER_OTLP_ENDPOINT, serviceName: e.OTEL_SERVICE_NAME };
}
