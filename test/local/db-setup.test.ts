import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { DATABASE_SETUP_VERSION } from "../../lib/store/database.js";
import { runCli } from "../support/cli.js";
import { mongoUri } from "../support/mongo.js";
import { useTestDatabase } from "../support/store-fixture.js";

// The command sets up a database of its own; this client inspects it.
const inspector = useTestDatabase("db_setup", { clearBeforeEach: false });

describe("db-setup (npm run db:setup)", { timeout: 90_000 }, () => {
  it("sets up the database MONGODB_URI and MONGODB_DB name, records it and says so", async () => {
    const dbName = `db_setup_${randomUUID().slice(0, 8)}`;
    const { code, stdout } = await runCli("lib/local/db-setup.ts", [], { MONGODB_URI: mongoUri(), MONGODB_DB: dbName });
    expect(code).toBe(0);
    expect(stdout).toBe(`database ${dbName} set up\n`);
    expect(await inspector.client.db(dbName).collection("setup").findOne({})).toMatchObject({ version: DATABASE_SETUP_VERSION });
  });

  it("exits 1 with one line naming MONGODB_URI, and no stack trace, when it is not set", async () => {
    const { code, errors } = await runCli("lib/local/db-setup.ts", []);
    expect(code).toBe(1);
    expect(errors).toEqual(["invalid configuration: MONGODB_URI: required (the database to set up); fix it in the environment (see docs/configuration.md)."]);
  });

  it("exits 1 with one line naming the unreachable host and never its password, not offering the embedded server", async () => {
    const { code, errors } = await runCli("lib/local/db-setup.ts", [], {
      MONGODB_URI: "mongodb://ada:s3cret@127.0.0.1:1/threadwise",
      MONGODB_SERVER_SELECTION_TIMEOUT_MS: "500",
    });
    expect(code).toBe(1);
    expect(errors).toEqual([
      "cannot reach MongoDB at 127.0.0.1:1 within 500 ms; start it or fix MONGODB_URI (MONGODB_SERVER_SELECTION_TIMEOUT_MS sets the wait).",
    ]);
  });

  it("exits 1 with one line for a configuration value that is wrong", async () => {
    const { code, errors } = await runCli("lib/local/db-setup.ts", [], { MONGODB_URI: mongoUri(), MONGODB_SOCKET_TIMEOUT_MS: "soon" });
    expect(code).toBe(1);
    expect(errors).toEqual([expect.stringMatching(/^invalid configuration: MONGODB_SOCKET_TIMEOUT_MS: /)]);
  });
});
