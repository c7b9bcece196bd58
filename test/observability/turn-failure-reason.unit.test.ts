import {
  ChannelDeliveryError,
  ContextBudgetExceededError,
  ModelCallLimitError,
  ModelCredentialsError,
  NotFoundError,
  ToolError,
  TurnConflictError,
  ValidationError,
} from "../../lib/errors.js";
import { turnFailureReason } from "../../lib/observability/index.js";

/** An error as the AWS SDK throws it: its name is the service's error type, with the HTTP status in `$metadata`. */
function sdkError(name: string, status: number): Error {
  return Object.assign(new Error("refused"), { name, $metadata: { httpStatusCode: status } });
}

describe("turnFailureReason", () => {
  it("returns model_denied for a model call refused for its credentials", () => {
    expect(turnFailureReason(new ModelCredentialsError("no access", { cause: sdkError("AccessDeniedException", 403) }))).toBe("model_denied");
  });

  it("returns throttled for Bedrock's throttling and any 429", () => {
    expect(turnFailureReason(sdkError("ThrottlingException", 400))).toBe("throttled");
    expect(turnFailureReason(sdkError("SomethingElse", 429))).toBe("throttled");
  });

  it("returns timeout for the model's timeout and an aborted call", () => {
    expect(turnFailureReason(sdkError("ModelTimeoutException", 408))).toBe("timeout");
    expect(turnFailureReason(Object.assign(new Error("aborted"), { name: "AbortError" }))).toBe("timeout");
  });

  it("returns budget for the context budget, the model-call limit and an oversized message", () => {
    expect(turnFailureReason(new ContextBudgetExceededError("too big", 1000, 2000))).toBe("budget");
    expect(turnFailureReason(new ModelCallLimitError("too many calls", 25))).toBe("budget");
  });

  it("returns tool_error, delivery, conflict and invalid by error class", () => {
    expect(turnFailureReason(new ToolError("failed", "sql_query"))).toBe("tool_error");
    expect(turnFailureReason(new ChannelDeliveryError("refused", "slack", 200))).toBe("delivery");
    expect(turnFailureReason(new TurnConflictError("busy", "turn-1"))).toBe("conflict");
    expect(turnFailureReason(new ValidationError("bad"))).toBe("invalid");
    expect(turnFailureReason(new NotFoundError("gone"))).toBe("invalid");
  });

  it("returns model_error for Bedrock's other failures, and internal for anything else", () => {
    expect(turnFailureReason(sdkError("ServiceUnavailableException", 503))).toBe("model_error");
    expect(turnFailureReason(new TypeError("x is undefined"))).toBe("internal");
    expect(turnFailureReason("not an error")).toBe("internal");
  });
});
