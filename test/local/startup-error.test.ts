import { MongoClient, MongoServerSelectionError } from "mongodb";
import { describe, expect, it } from "vitest";
import { explainStartupError, printableMongoUri } from "../../lib/local/startup-error.js";
import { ModelCredentialsError, ValidationError } from "../../lib/errors.js";

describe("explainStartupError", () => {
  it("returns a configuration error naming the first variable, how many more, and where to fix it", () => {
    const error = new ValidationError("invalid configuration", [
      { path: "PORT", message: "not a number" },
      { path: "LEASE_TTL_MS", message: "too small" },
    ]);
    expect(explainStartupError(error)).toBe("invalid configuration: PORT: not a number (and 1 more); fix it in the environment (see docs/configuration.md).");
  });

  it("returns an unreachable MongoDB by its hosts and the wait, never its password", () => {
    const error = new MongoServerSelectionError("Server selection timed out", { type: "Unknown", servers: new Map() } as never);
    const line = explainStartupError(error, { mongodbUri: "mongodb://admin:s3cret@db1:27017,db2:27017/threadwise?tls=true", serverSelectionTimeoutMs: 2000 });
    expect(line).toMatch(/^cannot reach MongoDB at db1:27017,db2:27017 within 2000 ms; start it or fix MONGODB_URI/);
    expect(line).not.toContain("s3cret");
    expect(explainStartupError(error)).toMatch(/^cannot reach MongoDB at the embedded server;/);
  });

  it("returns an unreachable MongoDB by its hosts, never part of a password that holds an unescaped @ or /", () => {
    const error = new MongoServerSelectionError("Server selection timed out", { type: "Unknown", servers: new Map() } as never);
    for (const uri of ["mongodb://admin:s3c@ret@db1:27017/threadwise", "mongodb://admin:s3c/ret@db1:27017/threadwise"]) {
      const line = explainStartupError(error, { mongodbUri: uri });
      expect(line).toMatch(/^cannot reach MongoDB at db1:27017;/);
      expect(line).not.toMatch(/s3c|ret@|admin/);
    }
  });

  it("returns a URI the driver cannot parse without its user or password", () => {
    const uri = "mongodb://admin:s3cret@/threadwise";
    let error: unknown;
    try {
      new MongoClient(uri);
    } catch (thrown) {
      error = thrown;
    }
    expect((error as Error).message).toContain("s3cret");
    const line = explainStartupError(error, { mongodbUri: uri });
    expect(line).toMatch(/^threadwise could not start: MongoParseError: /);
    expect(line).not.toMatch(/s3cret|admin/);
  });

  it("returns an unreachable MongoDB without the embedded server's hint for a command that needs a real one", () => {
    const error = new MongoServerSelectionError("Server selection timed out", { type: "Unknown", servers: new Map() } as never);
    expect(explainStartupError(error, { mongodbUri: "mongodb://db1:27017", serverSelectionTimeoutMs: 500, embeddedFallback: false })).toBe(
      "cannot reach MongoDB at db1:27017 within 500 ms; start it or fix MONGODB_URI (MONGODB_SERVER_SELECTION_TIMEOUT_MS sets the wait).",
    );
  });

  it("returns the product's own errors as they say it", () => {
    expect(explainStartupError(new ModelCredentialsError("MODEL_PROVIDER=bedrock needs AWS credentials"))).toBe("MODEL_PROVIDER=bedrock needs AWS credentials");
  });

  it("returns any other error as one line, without its stack", () => {
    expect(explainStartupError(new TypeError("bad\n    at somewhere"))).toBe("threadwise could not start: TypeError: bad");
    expect(explainStartupError("text")).toBe("threadwise could not start: text");
  });
});

describe("printableMongoUri", () => {
  it("returns the URI with its user and password cut out, even a password holding an unescaped @", () => {
    expect(printableMongoUri("mongodb+srv://ada:s3c@ret@cluster0.example.net/threadwise?retryWrites=true")).toBe(
      "mongodb+srv://…@cluster0.example.net/threadwise?retryWrites=true",
    );
  });

  it("returns a URI without credentials as it is", () => {
    expect(printableMongoUri("mongodb://127.0.0.1:27017/")).toBe("mongodb://127.0.0.1:27017/");
  });
});
