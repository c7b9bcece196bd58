import { MongoServerSelectionError } from "mongodb";
import { describe, expect, it } from "vitest";
import { turnFailure } from "../../lib/agent/turn-failure.js";
import {
  BudgetExhaustedError,
  ContextBudgetExceededError,
  ModelBusyError,
  ModelCallFailedError,
  ModelCallLimitError,
  ModelCredentialsError,
  RateLimitedError,
} from "../../lib/errors.js";

describe("turnFailure", () => {
  const unreachable = new MongoServerSelectionError("server selection timed out after 5000 ms", { type: "Unknown", servers: new Map() } as never);
  const cases: [string, unknown, { code: string; message: string }][] = [
    [
      "a budget used up, saying which and when it resets",
      new BudgetExhaustedError("the tenant's daily tokens are used up until 2026-12-08T00:00:00Z", "tenant_tokens_per_day", new Date()),
      { code: "budget_exhausted", message: "the tenant's daily tokens are used up until 2026-12-08T00:00:00Z" },
    ],
    [
      "a rate limit, saying which",
      new RateLimitedError("at most 3 concurrent turns", "user_concurrent_turns", 5),
      { code: "rate_limited", message: "at most 3 concurrent turns" },
    ],
    [
      "a model's failure, with its reason",
      new ModelCallFailedError("Bedrock said no: secret text", "model_denied", "the model refused the request"),
      { code: "model_denied", message: "the turn failed: the model refused the request" },
    ],
    ["a busy model", new ModelBusyError("throttled", "the model is throttling"), { code: "model_busy", message: "the turn failed: the model is throttling" }],
    ["the model-call cap", new ModelCallLimitError("12 calls: internal detail", 12), { code: "model_call_limit", message: "the turn failed" }],
    ["the model's credentials", new ModelCredentialsError("AccessDenied for arn:…"), { code: "model_credentials", message: "the turn failed" }],
    ["a view that cannot fit", new ContextBudgetExceededError("9000 > 8000", 8000, 9000), { code: "context_budget_exceeded", message: "the turn failed" }],
    ["the database away", unreachable, { code: "service_unavailable", message: "the turn failed: the database was unreachable" }],
    [
      "the database away, under another error",
      new Error("wrapped", { cause: unreachable }),
      { code: "service_unavailable", message: "the turn failed: the database was unreachable" },
    ],
    ["anything else, saying nothing of its text", new TypeError("cannot read secret of undefined"), { code: "internal_error", message: "the turn failed" }],
    ["a thrown non-error", "a string", { code: "internal_error", message: "the turn failed" }],
  ];

  it.each(cases)("returns the code and message for %s", (_name, error, failure) => {
    expect(turnFailure(error)).toEqual(failure);
  });
});
