import { randomUUID } from "node:crypto";
import { MongoClient, type Db, type MongoClientOptions } from "mongodb";
import { dropKnownCollections } from "./drop-collections.js";

export interface TestDatabase {
  client: MongoClient;
  db: Db;
  dbName: string;
  /** Drops every collection (the embedded server has no dropDatabase) and closes the client. */
  cleanup(): Promise<void>;
}

export function mongoUri(): string {
  const uri = process.env.MONGODB_URI;
  if (!uri) throw new Error("MONGODB_URI is not set: the integration tier's global setup starts the embedded server, not the unit tier's");
  return uri;
}

/** A client on a database of its own, so test files never see each other's data. */
export async function openTestDatabase(prefix = "test", clientOptions?: MongoClientOptions): Promise<TestDatabase> {
  const database = testDatabase(prefix, clientOptions);
  await database.client.connect();
  return database;
}

/** As `openTestDatabase`, not yet connected (the driver connects on the first operation), for stores built when a file loads. */
export function testDatabase(prefix = "test", clientOptions?: MongoClientOptions): TestDatabase {
  const client = new MongoClient(mongoUri(), clientOptions);
  const dbName = `${prefix}_${randomUUID().slice(0, 8)}`;
  const db = client.db(dbName);
  return {
    client,
    db,
    dbName,
    async cleanup() {
      await dropKnownCollections(db);
      await client.close();
    },
  };
}
