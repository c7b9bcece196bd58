import { describe, expect, it } from "vitest";
import { loadConfig } from "../lib/config/config.js";
import { databaseFor, ensureDatabaseSetUp, setupDatabase } from "../lib/setup-database.js";
import { COLLECTIONS } from "../lib/store/collections.js";
import { useTestDatabase } from "./support/store-fixture.js";

const test = useTestDatabase("setup_database");
const database = () => databaseFor(test.client, loadConfig({ MONGODB_DB: test.dbName, LEASE_TTL_MS: "60000", RETENTION_DAYS: "7", CHECKPOINTS_KEPT: "3" }));

describe("databaseFor", () => {
  it("returns the stores of the configured database with its lease, retention and checkpoints kept", () => {
    const made = database();
    expect(made.db.databaseName).toBe(test.dbName);
    expect(made.retention.periodMs).toBe(7 * 86_400_000);
  });
});

describe("setupDatabase", () => {
  it("makes every index, the channel events' TTL index included, and records the set-up", async () => {
    const made = database();
    await setupDatabase(made);
    const ttl = (await made.db.collection(COLLECTIONS.channelEvents).indexes()).find((i) => i.expireAfterSeconds !== undefined);
    expect(ttl).toBeDefined();
    expect(await made.isSetUp()).toBe(true);
  });
});

describe("ensureDatabaseSetUp", () => {
  it("returns true after setting up a database that records no set-up, and false once it does", async () => {
    const made = database();
    expect(await ensureDatabaseSetUp(made)).toBe(true);
    expect(await ensureDatabaseSetUp(made)).toBe(false);
  });
});
