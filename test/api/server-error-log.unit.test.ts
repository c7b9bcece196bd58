import { describe, expect, it } from "vitest";
import { serverErrorLogger } from "../../lib/api/server-error-log.js";
import { CredentialsMissingError } from "../../lib/config/credentials.js";
import { NotFoundError, ServiceUnavailableError, ValidationError } from "../../lib/errors.js";
import type { StructuredLogger } from "../../lib/logger.js";

/** A logger that keeps what it was given, for the assertions. */
function recordingLogger(): StructuredLogger & { entries: { level: string; message: string; fields: Record<string, unknown> }[] } {
  const entries: { level: string; message: string; fields: Record<string, unknown> }[] = [];
  const at = (level: string) => (message: string, fields: Record<string, unknown>) => void entries.push({ level, message, fields });
  return { entries, info: at("info"), warn: at("warn"), error: at("error") };
}

const ID = "0b9c6f5e-3f1a-4c1e-9d7a-1f2e3d4c5b6a";

describe("serverErrorLogger", () => {
  it("logs a server fault by error name, method and route with ids replaced, never the message", () => {
    const logger = recordingLogger();
    serverErrorLogger(logger)(new TypeError("secret=hunter2 in the question"), { method: "POST", path: `/v1/conversations/${ID}/messages` });
    expect(logger.entries).toEqual([
      { level: "error", message: "request failed", fields: { error: "TypeError", method: "POST", route: "/v1/conversations/{id}/messages" } },
    ]);
  });

  it("logs a fault that is not an Error as unknown, and a 503 as a server fault", () => {
    const logger = recordingLogger();
    serverErrorLogger(logger)("text", { method: "GET", path: "/v1/conversations" });
    serverErrorLogger(logger)(new ServiceUnavailableError("later"), { method: "GET", path: "/v1/conversations" });
    expect(logger.entries.map((e) => e.fields.error)).toEqual(["unknown", "ServiceUnavailableError"]);
  });

  it("logs missing credentials by the empty keys they name", () => {
    const logger = recordingLogger();
    const missing = new CredentialsMissingError([{ key: "slackSigningSecret", secret: "slackSigning" }]);
    serverErrorLogger(logger)(missing, { method: "POST", path: "/slack/events" });
    expect(logger.entries).toEqual([
      { level: "error", message: "credentials missing", fields: { missing: missing.missing, method: "POST", route: "/slack/events" } },
    ]);
  });

  it("logs nothing for a client error", () => {
    const logger = recordingLogger();
    for (const error of [new ValidationError("bad"), new NotFoundError("gone")]) serverErrorLogger(logger)(error, { method: "GET", path: "/v1/x" });
    expect(logger.entries).toEqual([]);
  });
});
