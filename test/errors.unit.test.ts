import { describe, expect, it } from "vitest";
import * as errors from "../lib/errors.js";
import {
  ApprovalDecisionError,
  ConflictError,
  NotFoundError,
  RoleLookupError,
  ServiceUnavailableError,
  StaleWriterError,
  ThreadwiseError,
  TurnConflictError,
  TurnSupersededError,
} from "../lib/errors.js";

/** Every class the module exports, made with a message alone (the typed context left undefined). */
type ErrorClass = new (message: string) => Error;
const classes = Object.entries(errors as Record<string, unknown>).filter((entry): entry is [string, ErrorClass] => typeof entry[1] === "function");

describe("errors", () => {
  it("returns, for every exported error, an instance of the one root whose name is its class's name", () => {
    expect(classes.length).toBeGreaterThan(25);
    for (const [exported, ErrorType] of classes) {
      const error = new ErrorType("what happened");
      expect(error).toBeInstanceOf(ThreadwiseError);
      expect(error.name).toBe(exported);
      expect(error.message).toBe("what happened");
    }
  });

  it("keeps the cause given in the options, wherever the options come in the constructor", () => {
    const cause = new Error("driver");
    expect(new NotFoundError("m", { cause }).cause).toBe(cause);
    expect(new ConflictError("m", 3, { cause }).cause).toBe(cause);
    expect(new TurnSupersededError("m", "t1", { cause }).cause).toBe(cause);
    expect(new StaleWriterError("m", "thread", 2, { cause, currentEpoch: 3 }).cause).toBe(cause);
  });

  describe("StaleWriterError", () => {
    it("returns a conflict carrying the thread, the refused epoch and the fence's current one", () => {
      const error = new StaleWriterError("m", "thread", 2, { currentEpoch: 3 });
      expect(error).toBeInstanceOf(ConflictError);
      expect(error).toMatchObject({ threadId: "thread", epoch: 2, currentEpoch: 3, retryAfterSeconds: undefined });
      expect(new StaleWriterError("m", "thread").currentEpoch).toBeUndefined();
    });
  });

  describe("ServiceUnavailableError", () => {
    it("returns 5 seconds to wait by default, and 30 for a role lookup", () => {
      expect(new ServiceUnavailableError("m").retryAfterSeconds).toBe(5);
      const lookup = new RoleLookupError("m", "slack");
      expect(lookup).toBeInstanceOf(ServiceUnavailableError);
      expect(lookup).toMatchObject({ retryAfterSeconds: 30, channel: "slack" });
    });
  });

  it("returns the turn and approval conflicts as their families, so one branch catches each", () => {
    expect(new TurnSupersededError("m", "t")).toBeInstanceOf(TurnConflictError);
    expect(new TurnSupersededError("m", "t")).toBeInstanceOf(ConflictError);
    expect(new errors.ApprovalExpiredError("m", "a", "expired")).toBeInstanceOf(ApprovalDecisionError);
    expect(new errors.CheckpointNotFoundError("m", "t", "", "c")).toBeInstanceOf(NotFoundError);
  });
});
