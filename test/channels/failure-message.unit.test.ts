import {
  BudgetExhaustedError,
  ConflictError,
  ContextBudgetExceededError,
  PayloadTooLargeError,
  RateLimitedError,
  ServiceUnavailableError,
  ValidationError,
} from "../../lib/errors.js";
import { turnFailureMessage } from "../../lib/channels/index.js";

describe("failure-message", () => {
  describe("turnFailureMessage", () => {
    it("returns a busy message when a turn is already running", () => {
      expect(turnFailureMessage(new ConflictError("lease"), "slack")).toMatch(/still answering an earlier message/);
    });

    it("returns advice to start a new thread in Slack when the conversation no longer fits", () => {
      expect(turnFailureMessage(new ContextBudgetExceededError("x", 1, 2), "slack")).toMatch(/start a new thread/);
    });

    it("returns a shorten-it message naming the limit when the message is too long", () => {
      expect(turnFailureMessage(new PayloadTooLargeError("content is over 16000 characters", 16_000), "slack")).toBe(
        "That message is too long for me (the limit is 16,000 characters). Please shorten it and send it again.",
      );
    });

    it("returns a rephrase-it message when the message was refused", () => {
      expect(turnFailureMessage(new ValidationError("invalid"), "slack")).toMatch(/rephrase it/);
    });

    it("returns the budget whose use is up, whose it is and when it resets", () => {
      const error = new BudgetExhaustedError("used up", "tenant.usdPerMonth", new Date("2027-01-01T00:00:00Z"));
      expect(turnFailureMessage(error, "slack")).toMatch(/^Your organization's monthly budget .* resets at 2027-01-01 00:00 UTC/);
    });

    it("returns a wait-a-minute message for a rate limit", () => {
      expect(turnFailureMessage(new RateLimitedError("too many", "user.turnsPerMinute", 30), "teams")).toMatch(/wait a minute/);
    });

    it("returns a try-later message when a dependency is down", () => {
      expect(turnFailureMessage(new ServiceUnavailableError("mongo"), "teams")).toMatch(/try again in a few minutes/);
    });

    it("returns a generic apology that names no internals for anything else", () => {
      const text = turnFailureMessage(new TypeError("Cannot read properties of undefined (reading 'toolCalls')"), "teams");
      expect(text).toBe("Sorry, something went wrong and I couldn't answer this message. Please try again.");
    });
  });
});
