import { MongoBulkWriteError, MongoNetworkError, MongoServerError, MongoServerSelectionError } from "mongodb";
import { describe, expect, it } from "vitest";
import { isMongoUnavailable } from "../../lib/store/mongo-unavailable.js";

describe("isMongoUnavailable", () => {
  it("returns true for the driver's unreachable errors, through wrappers and bulk writes", () => {
    expect(isMongoUnavailable(new MongoServerSelectionError("Server selection timed out", { type: "Unknown", servers: new Map() } as never))).toBe(true);
    expect(isMongoUnavailable(new Error("layer", { cause: new MongoNetworkError("reset") }))).toBe(true);
    expect(isMongoUnavailable(new MongoBulkWriteError(new MongoNetworkError("timed out") as never, {} as never))).toBe(true);
    expect(isMongoUnavailable(new MongoServerError({ message: "not primary", code: 10107, errorLabels: ["RetryableWriteError"] }))).toBe(true);
  });

  it("returns false for an operation the database refused, and for other errors", () => {
    expect(isMongoUnavailable(new MongoServerError({ message: "E11000 duplicate key", code: 11000 }))).toBe(false);
    expect(isMongoUnavailable(new Error("boom"))).toBe(false);
    expect(isMongoUnavailable("reset")).toBe(false);
  });
});
