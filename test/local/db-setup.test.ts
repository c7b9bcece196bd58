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

  it("fails, naming MONGODB_URI, when it is not set", async () => {
    const { code, errors } = await runCli("lib/local/db-setup.ts", []);
    expect(code).not.toBe(0);
    expect(errors.join("\n")).toContain("MONGODB_URI is not set");
  });
});
