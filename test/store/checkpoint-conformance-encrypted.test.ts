import { randomBytes, randomUUID } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { deltaChannelHistoryTests, validate, type CheckpointSaverTestInitializer } from "@langchain/langgraph-checkpoint-validation";
import type { Db } from "mongodb";
import { afterAll, expect } from "vitest";
import { FieldCipher } from "../../lib/crypto/field-cipher.js";
import { LocalTenantKeys } from "../../lib/crypto/local-tenant-keys.js";
import { ThreadwiseSaver } from "../../lib/store/threadwise-saver.js";
import { openTestDatabase, type TestDatabase } from "../support/mongo.js";

// LangGraph's checkpoint conformance suite again, with contents encrypted: its threads belong to
// no conversation, so the cipher maps every thread to one test tenant (the product refuses a
// thread without a conversation, see test/store/checkpoint/checkpoint-contents.test.ts).
let test: TestDatabase;
let cipher: FieldCipher;
const digestKey = randomBytes(32);
const databases = new WeakMap<ThreadwiseSaver, Db>();
let checked = 0;

const initializer: CheckpointSaverTestInitializer<ThreadwiseSaver> = {
  checkpointerName: "ThreadwiseSaver (encrypted)",
  beforeAllTimeout: 60_000,
  async beforeAll() {
    test = await openTestDatabase("conformance_sealed");
    cipher = new FieldCipher({
      keys: new LocalTenantKeys(await mkdtemp(join(tmpdir(), "threadwise-conformance-"))),
      tenantOf: async () => ({ issuer: "api", tenant: "conformance" }),
    });
  },
  async afterAll() {
    await test.client.close();
  },
  async createCheckpointer() {
    const dbName = `${test.dbName}_${randomUUID().slice(0, 8)}`;
    const saver = new ThreadwiseSaver({ client: test.client, dbName, cipher, digestKeyOf: async () => digestKey });
    const errors = await saver.setup();
    if (errors.length > 0) throw new AggregateError(errors, "checkpointer setup failed");
    databases.set(saver, test.client.db(dbName));
    return saver;
  },
  async destroyCheckpointer(saver) {
    const db = databases.get(saver);
    if (!db) return;
    // Every value the suite stored is a ciphertext.
    for (const name of [saver.checkpointCollectionName, saver.checkpointWritesCollectionName, saver.checkpointBlobsCollectionName]) {
      for (const doc of await db.collection(name).find({}).toArray()) {
        expect(clearBinaries(doc), name).toEqual([]);
        checked += 1;
      }
    }
    await Promise.all(
      [saver.checkpointCollectionName, saver.checkpointWritesCollectionName, saver.checkpointBlobsCollectionName, saver.checkpointThreadsCollectionName].map(
        (name) =>
          db
            .collection(name)
            .drop()
            .catch(() => undefined),
      ),
    );
  },
};

/** The paths of binary values that are not ciphertexts (subtype 0x80), but a header's versions (`checkpoint`, no values: kept clear). */
function clearBinaries(value: unknown, path = ""): string[] {
  if (path === ".checkpoint") return [];
  if (value !== null && typeof value === "object" && "_bsontype" in value && value._bsontype === "Binary") {
    return (value as unknown as { sub_type: number }).sub_type === 0x80 ? [] : [path];
  }
  if (value === null || typeof value !== "object" || value instanceof Date) return [];
  return Object.entries(value).flatMap(([key, v]) => clearBinaries(v, `${path}.${key}`));
}

validate(initializer);
deltaChannelHistoryTests(initializer);

afterAll(() => {
  expect(checked).toBeGreaterThan(100);
});
