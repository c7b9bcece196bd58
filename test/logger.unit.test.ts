import { afterEach, describe, expect, it, vi } from "vitest";
import { jsonConsoleLogger, silentLogger } from "../lib/logger.js";

afterEach(() => {
  vi.restoreAllMocks();
});

describe("logger", () => {
  describe("jsonConsoleLogger", () => {
    it("writes one JSON line per entry, info to stdout and warnings and errors to stderr", () => {
      const lines: [string, string][] = [];
      for (const stream of ["log", "warn", "error"] as const) vi.spyOn(console, stream).mockImplementation((line: string) => void lines.push([stream, line]));
      jsonConsoleLogger.info("turn completed", { turns: 1 });
      jsonConsoleLogger.warn("recall embedding failed", { error: "EmbeddingError" });
      jsonConsoleLogger.error("request failed", { route: "/v1/x" });
      expect(lines.map(([stream, line]) => [stream, JSON.parse(line)])).toEqual([
        ["log", { level: "info", message: "turn completed", turns: 1 }],
        ["warn", { level: "warn", message: "recall embedding failed", error: "EmbeddingError" }],
        ["error", { level: "error", message: "request failed", route: "/v1/x" }],
      ]);
    });
  });

  describe("silentLogger", () => {
    it("writes nothing", () => {
      const spies = (["log", "warn", "error"] as const).map((stream) => vi.spyOn(console, stream));
      silentLogger.info("a", {});
      silentLogger.warn("b", {});
      silentLogger.error("c", {});
      for (const spy of spies) expect(spy).not.toHaveBeenCalled();
    });
  });
});
