import { describe, expect, it } from "vitest";
import { SchemaVersionError } from "../../../lib/errors.js";
import type { Migration } from "../../../lib/store/migrations/migration.js";
import { MIGRATIONS, runMigrations, schemaVersion } from "../../../lib/store/migrations/migration-runner.js";
import { useTestDatabase } from "../../support/store-fixture.js";

const database = useTestDatabase("migration_runner");

/** Migrations that count their runs in `runs`. */
function counting(runs: string[], ...results: (boolean | undefined)[]): Migration[] {
  return results.map((result, i) => ({
    version: i + 1,
    name: `step-${i + 1}`,
    async up() {
      runs.push(`step-${i + 1}`);
      return result;
    },
  }));
}

describe("runMigrations", () => {
  it("runs the migrations due in order, recording each version applied", async () => {
    const runs: string[] = [];
    expect(await runMigrations(database.db, counting(runs, true, undefined))).toEqual({ from: 0, to: 2, applied: ["001-step-1", "002-step-2"] });
    expect(runs).toEqual(["step-1", "step-2"]);
    expect(await database.db.collection("setup").findOne({ _id: "schema" as never })).toMatchObject({
      schemaVersion: 2,
      applied: { "001": { name: "step-1", appliedAt: expect.any(Date) }, "002": { name: "step-2", appliedAt: expect.any(Date) } },
    });
  });

  it("applies nothing when run again, and only a migration added since", async () => {
    const runs: string[] = [];
    await runMigrations(database.db, counting(runs, true));
    expect(await runMigrations(database.db, counting(runs, true))).toEqual({ from: 1, to: 1, applied: [] });
    expect(await runMigrations(database.db, counting(runs, true, true))).toEqual({ from: 1, to: 2, applied: ["002-step-2"] });
    expect(runs).toEqual(["step-1", "step-2"]);
  });

  it("stops at a migration that could not finish, leaving it due", async () => {
    const runs: string[] = [];
    expect(await runMigrations(database.db, counting(runs, true, false, true))).toEqual({ from: 0, to: 1, applied: ["001-step-1"] });
    expect(await schemaVersion(database.db, counting([], true, true, true))).toBe(1);
  });

  it("throws SchemaVersionError, running nothing, when the database's version is newer than the code's", async () => {
    await database.db.collection("setup").insertOne({ _id: "schema" as never, schemaVersion: MIGRATIONS.length + 1, applied: {} });
    const runs: string[] = [];
    await expect(runMigrations(database.db, counting(runs, true))).rejects.toBeInstanceOf(SchemaVersionError);
    await expect(runMigrations(database.db)).rejects.toThrow(/newer than this release/);
    expect(runs).toEqual([]);
  });

  it("throws SchemaVersionError when the versions are not 1, 2, …", async () => {
    const [first] = counting([], true);
    await expect(runMigrations(database.db, [{ ...first, version: 2 }])).rejects.toBeInstanceOf(SchemaVersionError);
  });
});
