import { MongoBulkWriteError, MongoNetworkError, MongoServerError, MongoServerSelectionError } from "mongodb";
import { describe, expect, it } from "vitest";
import { DEFAULT_UNAVAILABLE_RETRY_AFTER_S, errorResponse } from "../../lib/api/error-response.js";
import {
  ApprovalConflictError,
  ApprovalExpiredError,
  ApprovalSupersededError,
  AuthenticationError,
  ChannelAuthenticationError,
  ConflictError,
  ContentEncryptionOffError,
  ContextBudgetExceededError,
  ForbiddenError,
  IdempotencyKeyReusedError,
  MethodNotAllowedError,
  ModelCallLimitError,
  ModelCredentialsError,
  NotAcceptableError,
  NotFoundError,
  NotLatestTurnError,
  PayloadTooLargeError,
  RoleLookupError,
  ServiceUnavailableError,
  StaleWriterError,
  TurnSupersededError,
  UnsupportedMediaTypeError,
  ValidationError,
} from "../../lib/errors.js";

function answer(error: unknown): { status: number; headers: Record<string, string>; error: Record<string, unknown> } {
  const response = errorResponse(error);
  return { status: response.status, headers: response.headers, error: JSON.parse(response.body).error };
}

describe("errorResponse", () => {
  it("returns each typed error's status and code, with its message", () => {
    const cases: [Error, number, string][] = [
      [new ValidationError("bad"), 400, "invalid_request"],
      [new AuthenticationError("who?"), 401, "unauthorized"],
      [new ChannelAuthenticationError("bad signature", "bad_signature"), 401, "unauthorized"],
      [new ForbiddenError("no"), 403, "forbidden"],
      [new NotFoundError("gone"), 404, "not_found"],
      [new NotAcceptableError("json only"), 406, "not_acceptable"],
      [new StaleWriterError("taken over", "c"), 409, "conflict"],
      [new ContentEncryptionOffError("stored clear"), 409, "content_encryption_off"],
      [new UnsupportedMediaTypeError("json only"), 415, "unsupported_media_type"],
      [new IdempotencyKeyReusedError("other body"), 422, "idempotency_key_reused"],
      [new ModelCredentialsError("no access"), 503, "model_credentials"],
    ];
    for (const [error, status, code] of cases) expect(answer(error)).toMatchObject({ status, error: { code, message: error.message } });
  });

  it("returns the typed context each error carries", () => {
    expect(answer(new ValidationError("bad", [{ path: "content", message: "blank" }])).error.details).toEqual([{ path: "content", message: "blank" }]);
    expect(answer(new ValidationError("bad")).error).not.toHaveProperty("details");
    expect(answer(new TurnSupersededError("replaced", "t1"))).toMatchObject({ status: 409, error: { code: "turn_superseded", turnId: "t1" } });
    expect(answer(new NotLatestTurnError("not latest", "t2"))).toMatchObject({ status: 409, error: { code: "turn_not_latest", turnId: "t2" } });
    expect(answer(new PayloadTooLargeError("big", 1000))).toMatchObject({ status: 413, error: { code: "payload_too_large", limit: 1000 } });
    expect(answer(new ContextBudgetExceededError("full", 100, 120))).toMatchObject({ status: 422, error: { budget: 100, tokens: 120 } });
    expect(answer(new ModelCallLimitError("too many", 8))).toMatchObject({ status: 422, error: { code: "model_call_limit", limit: 8 } });
  });

  it("returns the approvals' conflicts with the approval and its status: decided 409, superseded 409, expired 410", () => {
    expect(answer(new ApprovalConflictError("m", "a1", "approved"))).toMatchObject({
      status: 409,
      error: { code: "approval_conflict", approvalId: "a1", status: "approved" },
    });
    expect(answer(new ApprovalSupersededError("m", "a2", "superseded"))).toMatchObject({ status: 409, error: { code: "approval_superseded" } });
    expect(answer(new ApprovalExpiredError("m", "a3", "expired"))).toMatchObject({ status: 410, error: { code: "approval_expired", approvalId: "a3" } });
  });

  it("returns the headers a client acts on: WWW-Authenticate, Allow and Retry-After", () => {
    expect(answer(new AuthenticationError("m")).headers["www-authenticate"]).toBe("Bearer");
    expect(answer(new MethodNotAllowedError("m", ["GET", "POST"])).headers.allow).toBe("GET, POST");
    expect(answer(new ConflictError("busy", 2)).headers["retry-after"]).toBe("2");
    expect(answer(new ConflictError("busy")).headers).not.toHaveProperty("retry-after");
    expect(answer(new RoleLookupError("m", "teams"))).toMatchObject({ status: 503, headers: { "retry-after": "30" }, error: { code: "service_unavailable" } });
    expect(answer(new ServiceUnavailableError("m")).headers["retry-after"]).toBe("5");
  });

  it("returns 503 with Retry-After for the driver's unreachable errors, also inside wrappers", () => {
    const unreachable = new MongoServerSelectionError("Server selection timed out", { type: "Unknown", servers: new Map() } as never);
    const wrapped = new Error("persistence failed", { cause: new Error("layer", { cause: new MongoNetworkError("reset") }) });
    for (const error of [unreachable, wrapped]) {
      expect(answer(error)).toMatchObject({
        status: 503,
        headers: { "retry-after": String(DEFAULT_UNAVAILABLE_RETRY_AFTER_S) },
        error: { code: "service_unavailable", message: "the database is unreachable; retry shortly" },
      });
    }
  });

  it("returns 503 with Retry-After for a bulk write that failed on the network (a database freeze), and for a write the driver labels retryable", () => {
    // As the driver builds it when a bulk write's connection fails: the network error is its errorResponse.
    const bulk = new MongoBulkWriteError(new MongoNetworkError("connection 4 to 127.0.0.1:27017 timed out") as never, {} as never);
    const steppedDown = new MongoServerError({ message: "not primary", code: 10107, errorLabels: ["RetryableWriteError"] });
    for (const error of [bulk, new Error("layer", { cause: bulk }), steppedDown]) {
      expect(answer(error)).toMatchObject({
        status: 503,
        headers: { "retry-after": String(DEFAULT_UNAVAILABLE_RETRY_AFTER_S) },
        error: { code: "service_unavailable" },
      });
    }
  });

  it("returns 500 for a bulk write refused by the server (a duplicate key is not an outage)", () => {
    const duplicate = new MongoBulkWriteError({ message: "E11000 duplicate key", code: 11000, writeErrors: [] } as never, {} as never);
    expect(answer(duplicate).status).toBe(500);
  });

  it("returns 500 with no detail for any other error, a driver error too deep, or a non-error", () => {
    let deep: Error = new MongoNetworkError("reset");
    for (let i = 0; i < 5; i++) deep = new Error(`wrapper ${i}`, { cause: deep });
    for (const error of [new TypeError("secret=hunter2"), deep, "text"]) {
      expect(answer(error)).toEqual({ status: 500, headers: expect.any(Object), error: { code: "internal_error", message: "internal error" } });
    }
  });
});
