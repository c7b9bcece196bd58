import { randomBytes } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HumanMessage } from "@langchain/core/messages";
import { Binary, type Document } from "mongodb";
import { CLEAR_FIELDS } from "../../../lib/crypto/clear-field-cipher.js";
import { FieldCipher } from "../../../lib/crypto/field-cipher.js";
import { LocalTenantKeys } from "../../../lib/crypto/local-tenant-keys.js";
import { isCheckpointCollection, openedCheckpointDocument } from "../../../lib/store/checkpoint/checkpoint-export.js";
import { ThreadwiseSaver } from "../../../lib/store/threadwise-saver.js";
import { useTestDatabase } from "../../support/store-fixture.js";
import { newSaver, scriptedGraph, snapshotThread } from "./saver-support.js";

const test = useTestDatabase("checkpoint_export", { clearBeforeEach: false });
const CHECKPOINT_COLLECTIONS = ["checkpoints", "checkpoint_writes", "checkpoint_blobs"];

function binaries(value: unknown): Binary[] {
  if (value instanceof Binary) return [value];
  if (value === null || typeof value !== "object" || value instanceof Date) return [];
  return Object.values(value).flatMap(binaries);
}

describe("openedCheckpointDocument", () => {
  it("returns each document with every sealed value opened, which a clear saver reads back as the sealed one does", async () => {
    const cipher = new FieldCipher({
      keys: new LocalTenantKeys(await mkdtemp(join(tmpdir(), "threadwise-export-"))),
      tenantOf: async () => ({ issuer: "api", tenant: "acme" }),
    });
    const sealedDb = test.client.db(`${test.dbName}_sealed`);
    const sealed = new ThreadwiseSaver({ client: test.client, dbName: sealedDb.databaseName, cipher, digestKeyOf: async () => randomBytes(32) });
    expect(await sealed.setup()).toEqual([]);
    const graph = scriptedGraph(sealed, { toolOutput: 5_000 });
    for (const q of ["q0 secret", "q1 secret"]) await graph.invoke({ messages: [new HumanMessage(q)] }, { configurable: { thread_id: "t" } });
    await graph.invoke({ messages: [new HumanMessage("q2")] }, { configurable: { thread_id: "t" }, interruptBefore: ["tools"] });

    const { saver: clear, db: target } = await newSaver(test);
    for (const name of CHECKPOINT_COLLECTIONS) {
      const docs: Document[] = [];
      for (const doc of await sealedDb.collection(name).find({}).toArray()) docs.push(await openedCheckpointDocument(name, doc, cipher));
      expect(docs.length, name).toBeGreaterThan(0);
      expect(docs.flatMap(binaries).every((b) => b.sub_type === 0)).toBe(true);
      await target.collection(name).insertMany(docs);
    }
    expect(await snapshotThread(clear, "t")).toEqual(await snapshotThread(sealed, "t"));
    for (const name of [...CHECKPOINT_COLLECTIONS, "checkpoint_threads"])
      await sealedDb
        .collection(name)
        .drop()
        .catch(() => undefined);
  });

  it("returns the document as it is with encryption off, and names only the checkpointer's collections", async () => {
    const doc = { thread_id: "t", value: new Binary(new Uint8Array([1])) };
    expect(await openedCheckpointDocument("checkpoint_writes", doc, CLEAR_FIELDS)).toBe(doc);
    expect(CHECKPOINT_COLLECTIONS.every(isCheckpointCollection)).toBe(true);
    expect(isCheckpointCollection("messages")).toBe(false);
  });
});
