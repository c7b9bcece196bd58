import { randomBytes } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HumanMessage, type BaseMessage } from "@langchain/core/messages";
import type { CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { FieldCipher } from "../../lib/crypto/field-cipher.js";
import { LocalTenantKeys } from "../../lib/crypto/local-tenant-keys.js";
import { DocumentTooLargeError, ValidationError } from "../../lib/errors.js";
import { MONGODB_MAX_DOCUMENT_BYTES } from "../../lib/store/checkpoint/document-size.js";
import { ThreadwiseSaver } from "../../lib/store/threadwise-saver.js";
import { useTestDatabase } from "../support/store-fixture.js";
import { SAVER_COLLECTIONS, checkpointWith, documents, loopMetadata as metadata, newSaver as newSaverIn, scriptedGraph } from "./checkpoint/saver-support.js";

// Each test makes its checkpointer on a database of its own (`newSaver`); this one holds the client.
const test = useTestDatabase("saver", { clearBeforeEach: false });

const newSaver = (options: Parameters<typeof newSaverIn>[1] = {}) => newSaverIn(test, options);
const thread = (thread_id = "t") => ({ configurable: { thread_id } });

async function runTurns(saver: ThreadwiseSaver, threadId: string, turns: number, prune: boolean, first = 0) {
  const graph = scriptedGraph(saver);
  let state: { messages: BaseMessage[] } = { messages: [] };
  for (let turn = first; turn < first + turns; turn += 1) {
    state = await graph.invoke({ messages: [new HumanMessage(`q${turn}`)] }, thread(threadId));
    if (prune) await saver.prune(threadId);
  }
  return state;
}

describe("ThreadwiseSaver", () => {
  describe("constructor", () => {
    it("throws when maxDocumentBytes is above MongoDB's 16 MB limit", () => {
      expect(() => new ThreadwiseSaver({ client: test.client, maxDocumentBytes: MONGODB_MAX_DOCUMENT_BYTES + 1 })).toThrow(ValidationError);
    });

    it("throws when checkpointsKept is not a positive integer", () => {
      expect(() => new ThreadwiseSaver({ client: test.client, checkpointsKept: 0 })).toThrow(ValidationError);
    });
  });

  describe("setup", () => {
    it("creates a unique (thread, namespace, channel, version) index on the blobs", async () => {
      const { db } = await newSaver();
      const indexes = await db.collection("checkpoint_blobs").listIndexes().toArray();
      expect(indexes).toContainEqual(expect.objectContaining({ key: { thread_id: 1, checkpoint_ns: 1, channel: 1, version: 1 }, unique: true }));
    });

    it("creates upserted_at TTL indexes on the four collections when a ttl is set", async () => {
      const { db } = await newSaver({ ttl: 3600 });
      for (const name of SAVER_COLLECTIONS) {
        const indexes = await db.collection(name).listIndexes().toArray();
        expect(indexes, name).toContainEqual(expect.objectContaining({ key: { upserted_at: 1 }, expireAfterSeconds: 3600 }));
      }
    });

    it("uses the configured collection names", async () => {
      const { saver, db } = await newSaver({
        checkpointCollectionName: "cp",
        checkpointWritesCollectionName: "cpw",
        checkpointBlobsCollectionName: "cpb",
        checkpointThreadsCollectionName: "cpt",
      });
      await saver.claimThread("t", 1);
      const config = await saver.put({ configurable: { thread_id: "t", fence_epoch: 1 } }, checkpointWith({ a: [1] }, { a: 1 }), metadata, { a: 1 });
      await saver.putWrites(config, [["a", 2]], "task");
      for (const name of ["cp", "cpw", "cpb", "cpt"]) expect((await documents(db, name)).length, name).toBe(1);
    });
  });

  describe("put", () => {
    it("throws DocumentTooLargeError before writing anything when a channel value exceeds the limit", async () => {
      const { saver, db } = await newSaver({ maxDocumentBytes: 10_000 });
      const put = saver.put(thread(), checkpointWith({ small: 1, big: "x".repeat(20_000) }, { small: 1, big: 1 }), metadata, { small: 1, big: 1 });
      await expect(put).rejects.toThrow(DocumentTooLargeError);
      await expect(put).rejects.toMatchObject({ limit: 10_000, bytes: expect.any(Number) });
      expect(await documents(db, "checkpoints")).toEqual([]);
      expect(await documents(db, "checkpoint_blobs")).toEqual([]);
    });

    it("stamps upserted_at on every document it writes when a ttl is set", async () => {
      const { saver, db } = await newSaver({ ttl: 3600 });
      await saver.claimThread("t", 1);
      const config = await saver.put({ configurable: { thread_id: "t", fence_epoch: 1 } }, checkpointWith({ a: [1] }, { a: 1 }), metadata, { a: 1 });
      await saver.putWrites(config, [["a", 2]], "task");
      for (const name of SAVER_COLLECTIONS) {
        expect((await documents(db, name)).length, name).toBeGreaterThan(0);
        for (const doc of await documents(db, name)) expect(doc.upserted_at, name).toBeInstanceOf(Date);
      }
    });

    it("stamps expiresAt, expiresAfterMs after the write, on every document it writes when expiresAfterMs is set", async () => {
      const { saver, db } = await newSaver({ expiresAfterMs: 3_600_000 });
      const before = Date.now();
      await saver.claimThread("t", 1);
      const config = await saver.put({ configurable: { thread_id: "t", fence_epoch: 1 } }, checkpointWith({ a: [1] }, { a: 1 }), metadata, { a: 1 });
      await saver.putWrites(config, [["a", 2]], "task");
      for (const name of SAVER_COLLECTIONS) {
        expect((await documents(db, name)).length, name).toBeGreaterThan(0);
        for (const doc of await documents(db, name)) {
          expect(doc.expiresAt.getTime(), name).toBeGreaterThanOrEqual(before + 3_600_000);
          expect(doc.expiresAt.getTime(), name).toBeLessThanOrEqual(Date.now() + 3_600_000);
        }
      }
    });

    it("refreshes upserted_at of the blobs refreshed more than half the ttl ago, when a ttl is set", async () => {
      const { saver, db } = await newSaver({ ttl: 1 });
      const first = await saver.put(thread(), checkpointWith({ kept: ["v"], moving: 1 }, { kept: 1, moving: 1 }), metadata, { kept: 1, moving: 1 });
      const [before] = await db.collection("checkpoint_blobs").find({ channel: "kept" }).toArray();
      await new Promise((resolve) => setTimeout(resolve, 600));
      await saver.put(first, checkpointWith({ kept: ["v"], moving: 2 }, { kept: 1, moving: 2 }), metadata, { moving: 2 });
      const [after] = await db.collection("checkpoint_blobs").find({ channel: "kept" }).toArray();
      expect(after.upserted_at.getTime()).toBeGreaterThan(before.upserted_at.getTime());
    });

    it("leaves upserted_at of blobs refreshed less than half the ttl ago, so a put does not rewrite the thread", async () => {
      const { saver, db } = await newSaver({ ttl: 3600 });
      const first = await saver.put(thread(), checkpointWith({ kept: ["v"], moving: 1 }, { kept: 1, moving: 1 }), metadata, { kept: 1, moving: 1 });
      const [before] = await db.collection("checkpoint_blobs").find({ channel: "kept" }).toArray();
      await new Promise((resolve) => setTimeout(resolve, 20));
      await saver.put(first, checkpointWith({ kept: ["v"], moving: 2 }, { kept: 1, moving: 2 }), metadata, { moving: 2 });
      const [after] = await db.collection("checkpoint_blobs").find({ channel: "kept" }).toArray();
      expect(after.upserted_at.getTime()).toBe(before.upserted_at.getTime());
    });
  });

  describe("putWrites", () => {
    it("throws DocumentTooLargeError when a write exceeds the limit, writing none of the batch", async () => {
      const { saver, db } = await newSaver({ maxDocumentBytes: 10_000 });
      const config = await saver.put(thread(), checkpointWith({}, {}), metadata, {});
      await expect(
        saver.putWrites(
          config,
          [
            ["a", "small"],
            ["b", "x".repeat(20_000)],
          ],
          "task",
        ),
      ).rejects.toThrow(DocumentTooLargeError);
      expect(await documents(db, "checkpoint_writes")).toEqual([]);
    });

    it("returns pending writes in task path order, whatever the order they were stored in", async () => {
      const { saver } = await newSaver();
      const config = await saver.put(thread(), checkpointWith({}, {}), metadata, {});
      await saver.putWrites(config, [["c", "second"]], "task-a", "~2");
      await saver.putWrites(config, [["c", "first"]], "task-b", "~1");
      expect((await saver.getTuple(config))?.pendingWrites).toEqual([
        ["task-b", "c", "first"],
        ["task-a", "c", "second"],
      ]);
    });
  });

  describe("list", () => {
    it("returns, with encryption on, the checkpoints whose metadata matches a filter on a key kept sealed, which metadata_search does not hold", async () => {
      const cipher = new FieldCipher({
        keys: new LocalTenantKeys(await mkdtemp(join(tmpdir(), "threadwise-saver-"))),
        tenantOf: async () => ({ issuer: "api", tenant: "acme" }),
      });
      const { saver, db } = await newSaverIn(test, { cipher, digestKeyOf: async () => randomBytes(32) });
      const config = { configurable: { thread_id: "t", checkpoint_ns: "" } };
      const first = await saver.put(config, checkpointWith({}, {}), { ...metadata, note: "about acme-plan" } as CheckpointMetadata, {});
      await saver.put(first, checkpointWith({}, {}), { ...metadata, step: 1, note: "other" } as CheckpointMetadata, {});
      const found = [];
      for await (const tuple of saver.list(config, { filter: { note: "about acme-plan", source: "loop" } })) found.push(tuple.metadata);
      expect(found).toEqual([{ ...metadata, note: "about acme-plan" }]);
      const raw = await documents(db, "checkpoints", "t");
      expect(raw.map((d) => d.metadata_search)).toEqual([
        { source: "loop", step: 0, parents: {} },
        { source: "loop", step: 1, parents: {} },
      ]);
      expect(JSON.stringify(raw)).not.toContain("acme-plan");
    });
  });

  describe("deleteThread", () => {
    it("removes every checkpoint, write, blob and fence of the thread and nothing of other threads", async () => {
      const { saver, db } = await newSaver();
      await saver.claimThread("t", 1);
      await saver.claimThread("other", 1);
      await runTurns(saver, "t", 2, false);
      await runTurns(saver, "other", 1, false);
      await saver.deleteThread("t");
      for (const name of SAVER_COLLECTIONS) {
        expect(await documents(db, name, "t")).toEqual([]);
        expect((await documents(db, name, "other")).length).toBeGreaterThan(0);
      }
    });
  });
});
