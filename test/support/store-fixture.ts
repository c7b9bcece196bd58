import type { Db, MongoClientOptions } from "mongodb";
import { afterAll, beforeAll, beforeEach } from "vitest";
import { COLLECTIONS } from "../../lib/store/collections.js";
import { testDatabase, type TestDatabase } from "./mongo.js";

export interface StoreFixture<T> {
  /** The file's own database. */
  database: TestDatabase;
  /** The stores `build` made on it; their `setup()` has run before the first test. */
  stores: T;
}

export interface StoreFixtureOptions {
  /** Empty every known collection before each test. Default: true. */
  clearBeforeEach?: boolean;
  /** Options of the file's client (`monitorCommands` to count the commands it sends). Default: none. */
  clientOptions?: MongoClientOptions;
}

/** Deletes every document of every known collection (the embedded server can neither list nor drop them). */
export async function clearKnownCollections(db: Db): Promise<void> {
  await Promise.all(Object.values(COLLECTIONS).map((name) => db.collection(name).deleteMany({})));
}

/**
 * A database of the file's own, registered as the file's vitest hooks: connected before the first
 * test, emptied (every known collection) before each one when asked, emptied and closed after the
 * file. For tests that make their stores themselves (a saver per test, an app over the database).
 */
export function useTestDatabase(prefix: string, options: StoreFixtureOptions = {}): TestDatabase {
  const database = testDatabase(prefix, options.clientOptions);
  beforeAll(() => database.client.connect());
  if (options.clearBeforeEach ?? true) beforeEach(() => clearKnownCollections(database.db));
  afterAll(async () => {
    await clearKnownCollections(database.db);
    await database.cleanup();
  });
  return database;
}

/**
 * The set-up the store tests share: {@link useTestDatabase}, and the stores `build` makes on it
 * with their `setup()` run and checked before the first test (a setup that returns errors, as
 * the saver's does, fails).
 */
export function useStoreFixture<T extends Record<string, object>>(prefix: string, build: (db: Db) => T, options: StoreFixtureOptions = {}): StoreFixture<T> {
  const database = useTestDatabase(prefix, options);
  const stores = build(database.db);
  beforeAll(async () => {
    for (const [name, store] of Object.entries(stores)) {
      if (!("setup" in store) || typeof store.setup !== "function") continue;
      const result: unknown = await store.setup();
      if (Array.isArray(result) && result.length > 0) throw new Error(`${name}.setup() failed: ${result.join("; ")}`);
    }
  });
  return { database, stores };
}
