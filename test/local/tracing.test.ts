import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { context, propagation, trace } from "@opentelemetry/api";
import { InMemorySpanExporter } from "@opentelemetry/sdk-trace-base";
import { loadTracingConfig } from "../../lib/config/tracing-config.js";
import { registerLocalTracing } from "../../lib/local/tracing.js";

const recording = () => trace.getTracer("test").startSpan("probe").isRecording();

describe("tracing (local)", () => {
  describe("registerLocalTracing", () => {
    it("returns undefined and registers nothing when TRACING_EXPORTER is none", () => {
      expect(registerLocalTracing(loadTracingConfig({}))).toBeUndefined();
      expect(recording()).toBe(false);
    });

    it("records spans into the given exporter, carries context across awaits and as traceparent, and unregisters on shutdown", async () => {
      const exporter = new InMemorySpanExporter();
      const tracing = registerLocalTracing(loadTracingConfig({}), { exporter });
      const carrier: Record<string, string> = {};
      await trace.getTracer("test").startActiveSpan("outer", async (outer) => {
        await new Promise((r) => setTimeout(r, 1));
        trace.getTracer("test").startSpan("inner").end();
        propagation.inject(context.active(), carrier);
        outer.end();
      });
      const [inner, outer] = exporter.getFinishedSpans();
      expect(inner.parentSpanContext?.spanId).toBe(outer.spanContext().spanId);
      expect(carrier.traceparent).toBe(`00-${outer.spanContext().traceId}-${outer.spanContext().spanId}-01`);
      await tracing?.shutdown();
      expect(recording()).toBe(false);
    });

    it("posts the spans as OTLP protobuf to <OTEL_EXPORTER_OTLP_ENDPOINT>/v1/traces when TRACING_EXPORTER is otlp", async () => {
      const received: { path?: string; type?: string; bytes: number }[] = [];
      const collector = createServer((req: IncomingMessage, res) => {
        let bytes = 0;
        req.on("data", (chunk: Buffer) => (bytes += chunk.length));
        req.on("end", () => {
          received.push({ path: req.url, type: req.headers["content-type"], bytes });
          res.writeHead(200, { "content-type": "application/x-protobuf" }).end();
        });
      });
      await new Promise<void>((resolve) => collector.listen(0, "127.0.0.1", resolve));
      const { port } = collector.address() as AddressInfo;
      const config = loadTracingConfig({ TRACING_EXPORTER: "otlp", OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}/` });
      const tracing = registerLocalTracing(config);
      trace.getTracer("test").startSpan("exported").end();
      await tracing?.shutdown();
      await new Promise<void>((resolve) => collector.close(() => resolve()));
      expect(received).toEqual([{ path: "/v1/traces", type: "application/x-protobuf", bytes: expect.any(Number) }]);
      expect(received[0].bytes).toBeGreaterThan(0);
    });
  });
});
