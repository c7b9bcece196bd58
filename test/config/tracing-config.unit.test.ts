import { DEFAULT_OTLP_ENDPOINT, DEFAULT_TRACING_EXPORTER, DEFAULT_TRACING_SERVICE_NAME, loadTracingConfig } from "../../lib/config/tracing-config.js";
import { ValidationError } from "../../lib/errors.js";

describe("tracing-config", () => {
  describe("loadTracingConfig", () => {
    it("returns no exporter, the local collector's endpoint and the product's service name when nothing is set", () => {
      expect(loadTracingConfig({})).toEqual({
        exporter: DEFAULT_TRACING_EXPORTER,
        otlpEndpoint: DEFAULT_OTLP_ENDPOINT,
        serviceName: DEFAULT_TRACING_SERVICE_NAME,
      });
      expect(DEFAULT_TRACING_EXPORTER).toBe("none");
    });

    it("returns the exporter, endpoint and service name that are set", () => {
      const env = { TRACING_EXPORTER: "otlp", OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_SERVICE_NAME: "threadwise-dev" };
      expect(loadTracingConfig(env)).toEqual({ exporter: "otlp", otlpEndpoint: "http://collector:4318", serviceName: "threadwise-dev" });
    });

    it("throws a ValidationError naming the variable for an unknown exporter or an endpoint that is no URL", () => {
      for (const [name, value] of [
        ["TRACING_EXPORTER", "jaeger"],
        ["OTEL_EXPORTER_OTLP_ENDPOINT", "not a url"],
      ]) {
        const error = (() => {
          try {
            loadTracingConfig({ [name]: value });
          } catch (e) {
            return e;
          }
        })();
        expect(error).toBeInstanceOf(ValidationError);
        expect((error as ValidationError).details?.map((d) => d.path)).toEqual([name]);
      }
    });
  });
});
