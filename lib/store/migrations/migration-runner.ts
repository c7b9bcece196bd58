import type { Db } from "mongodb";
import { COLLECTIONS } from "../collections.js";
import { SchemaVersionError } from "../../errors.js";
import { conversationOwners } from "./001-conversation-owners.js";
import { compactStoredLists } from "./002-compact-stored-lists.js";
import { listLinkFormats } from "./003-list-link-formats.js";
import type { Migration } from "./migration.js";

/** Every migration, in version order: add a new one at the end (docs/storage.md, "Migrations"). */
export const MIGRATIONS: readonly Migration[] = [conversationOwners, compactStoredLists, listLinkFormats];

/** The `_id` of the schema version document in the `setup` collection. */
export const SCHEMA_ID = "schema";

/** The database's schema version: the last migration applied, and each one applied with when. */
export interface SchemaDocument {
  _id: string;
  schemaVersion: number;
  /** By version, three digits ("001"): the migration's name and when it was applied. */
  applied: Record<string, { name: string; appliedAt: Date }>;
}

/** What {@link runMigrations} did: the schema version before and after, and the migrations it applied. */
export interface MigrationRun {
  from: number;
  to: number;
  applied: string[];
}

const schema = (db: Db) => db.collection<SchemaDocument>(COLLECTIONS.setup);

/**
 * The database's schema version (0 before any migration).
 * @throws SchemaVersionError when it is newer than the newest of `migrations`: the database was
 *   set up by a later release, whose data this code may not read.
 */
export async function schemaVersion(db: Db, migrations: readonly Migration[] = MIGRATIONS): Promise<number> {
  const version = (await schema(db).findOne({ _id: SCHEMA_ID }))?.schemaVersion ?? 0;
  const latest = migrations.at(-1)?.version ?? 0;
  if (version > latest) {
    throw new SchemaVersionError(`database schema version ${version} is newer than this release's ${latest}; refusing to start (deploy the newer release)`);
  }
  return version;
}

/**
 * Runs the migrations above the database's schema version, in order, recording each one applied.
 * Stops at one that could not finish (it runs again next time). Idempotent: a second run applies nothing.
 * @throws SchemaVersionError when the database's version is newer than the code's, or the versions are not 1, 2, ….
 */
export async function runMigrations(db: Db, migrations: readonly Migration[] = MIGRATIONS): Promise<MigrationRun> {
  migrations.forEach((migration, i) => {
    if (migration.version !== i + 1) throw new SchemaVersionError(`migration ${migration.name} has version ${migration.version}, expected ${i + 1}`);
  });
  const from = await schemaVersion(db, migrations);
  const run: MigrationRun = { from, to: from, applied: [] };
  for (const migration of migrations.filter((m) => m.version > from)) {
    if ((await migration.up(db)) === false) break;
    const number = String(migration.version).padStart(3, "0");
    // $set only (the embedded server used locally has neither $push nor $max); versions run in order.
    await schema(db).updateOne(
      { _id: SCHEMA_ID },
      { $set: { schemaVersion: migration.version, [`applied.${number}`]: { name: migration.name, appliedAt: new Date() } } },
      { upsert: true },
    );
    run.to = migration.version;
    run.applied.push(`${number}-${migration.name}`);
  }
  return run;
}
