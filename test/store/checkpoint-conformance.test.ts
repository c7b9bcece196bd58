import { randomUUID } from "node:crypto";
import { deltaChannelHistoryTests, validate, type CheckpointSaverTestInitializer } from "@langchain/langgraph-checkpoint-validation";
import type { Db } from "mongodb";
import { ThreadwiseSaver } from "../../lib/store/threadwise-saver.js";
import { openTestDatabase, type TestDatabase } from "../support/mongo.js";

// LangGraph's checkpoint conformance suite (718 checks) and its opt-in DeltaChannel history
// checks, run against the checkpointer as the product configures it. Each checkpointer gets a
// database of its own, as the suite requires.
let test: TestDatabase;
const databases = new WeakMap<ThreadwiseSaver, Db>();

async function dropCollections(saver: ThreadwiseSaver, db: Db): Promise<void> {
  const names = [
    saver.checkpointCollectionName,
    saver.checkpointWritesCollectionName,
    saver.checkpointBlobsCollectionName,
    saver.checkpointThreadsCollectionName,
  ];
  await Promise.all(
    names.map((name) =>
      db
        .collection(name)
        .drop()
        .catch(() => undefined),
    ),
  );
}

const initializer: CheckpointSaverTestInitializer<ThreadwiseSaver> = {
  checkpointerName: "ThreadwiseSaver",
  beforeAllTimeout: 60_000,
  async beforeAll() {
    test = await openTestDatabase("conformance");
  },
  async afterAll() {
    // Each checkpointer's collections are dropped as it is destroyed; the embedded server has no
    // listCollections for TestDatabase.cleanup() to use.
    await test.client.close();
  },
  async createCheckpointer() {
    const dbName = `${test.dbName}_${randomUUID().slice(0, 8)}`;
    const saver = new ThreadwiseSaver({ client: test.client, dbName });
    const errors = await saver.setup();
    if (errors.length > 0) throw new AggregateError(errors, "checkpointer setup failed");
    databases.set(saver, test.client.db(dbName));
    return saver;
  },
  async destroyCheckpointer(saver) {
    const db = databases.get(saver);
    if (db) await dropCollections(saver, db);
  },
};

validate(initializer);
deltaChannelHistoryTests(initializer);
