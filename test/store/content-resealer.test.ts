import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Binary, Document } from "mongodb";
import { beforeEach, describe, expect, it } from "vitest";
import { apiPrincipal } from "../../lib/auth/principal.js";
import { LocalTenantKeys } from "../../lib/crypto/local-tenant-keys.js";
import { CollectionResealWalker } from "../../lib/store/collection-reseal-walker.js";
import { COLLECTIONS } from "../../lib/store/collections.js";
import { ContentResealer, type ResealPass, type ResealWalker } from "../../lib/store/content-resealer.js";
import { ThreadwiseDatabase } from "../../lib/store/database.js";
import { useTestDatabase } from "../support/store-fixture.js";

const database = useTestDatabase("content_resealer");
const acme = { issuer: "api" as const, tenant: "acme" };
const MAX_AGE_MS = 60_000;
let store: ThreadwiseDatabase;

/** Conversations' titles: the sealed field the walker below re-seals. */
function titles(fail?: (id: string) => boolean): ResealWalker {
  return new CollectionResealWalker("titles", [
    {
      collection: database.db.collection(COLLECTIONS.conversations),
      fields: ["title"],
      owner: {
        kind: "conversation",
        conversationOf: (doc) => {
          if (fail?.(String(doc._id))) throw new Error("the process died here");
          return String(doc._id);
        },
      },
    },
  ]);
}

async function conversations(count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const { _id } = await store.conversations.create(apiPrincipal(`user${i}`, "acme"));
    await store.conversations.touch(_id, { title: `title ${i}` });
    ids.push(_id);
  }
  return ids.sort();
}

async function underKey(ids: string[], keyId: string): Promise<boolean[]> {
  const docs = await database.db
    .collection<Document>(COLLECTIONS.conversations)
    .find({ _id: { $in: ids } } as Document)
    .sort({ _id: 1 })
    .toArray();
  return docs.map((d) => Buffer.from((d.title as Binary).value()).includes(Buffer.from(keyId)));
}

/** The rotation, and its job, in a resealer of batches of 2 whose data keys live a minute. */
async function rotated(walker: ResealWalker, rotatedAt = new Date()) {
  const resealer = new ContentResealer(database.db, store.cipher, [walker], { batchSize: 2, dataKeyMaxAgeMs: MAX_AGE_MS, leaseMs: 10_000 });
  const { keyId } = await store.cipher.rotate(acme, rotatedAt);
  await resealer.schedule(acme, keyId, rotatedAt);
  return {
    resealer,
    keyId,
    later:
      (ms = 0) =>
      () =>
        new Date(rotatedAt.getTime() + MAX_AGE_MS + ms),
  };
}

beforeEach(async () => {
  store = new ThreadwiseDatabase(database.client, { dbName: database.dbName, contentKeys: new LocalTenantKeys(await mkdtemp(join(tmpdir(), "resealer-"))) });
});

describe("ContentResealer", () => {
  describe("run", () => {
    it("returns waiting until the rotation has reached every process, and touches nothing before", async () => {
      const ids = await conversations(2);
      const { resealer, keyId } = await rotated(titles());
      const outcome = await resealer.run(acme);
      expect(outcome).toMatchObject({ status: "waiting" });
      expect(await underKey(ids, keyId)).toEqual([false, false]);
    });

    it("resumes after an interruption from the batch it stopped at, and finishes with every value under the new key", async () => {
      const ids = await conversations(7);
      const { resealer, keyId, later } = await rotated(titles());
      let batches = 0;
      const first = await resealer.run(acme, { now: later(), shouldStop: () => ++batches >= 2 });
      expect(first.status).toBe("paused");
      if (first.status !== "paused") return;
      expect(first.job).toMatchObject({ status: "running", cursor: { walker: "titles", collection: COLLECTIONS.conversations, lastId: ids[3] }, lease: null });
      expect(await underKey(ids, keyId)).toEqual([true, true, true, true, false, false, false]);
      const second = await resealer.run(acme, { now: later() });
      expect(second.status).toBe("done");
      expect(await underKey(ids, keyId)).toEqual(ids.map(() => true));
      // Each document examined once over the two runs: the second began where the first stopped.
      if (second.status === "done") expect(second.job.counts).toEqual({ examined: 7, resealed: 7, raced: 0 });
      expect(await resealer.run(acme, { now: later() })).toEqual({ status: "none" });
      const ref = { collection: COLLECTIONS.conversations, id: ids[6], field: "title" };
      expect(await store.cipher.openText(ids[6], ref, (await store.conversations.get(ids[6]))?.title)).toMatch(/^title \d$/);
    });

    it("leaves a run that died holding the job to its lease, then resumes it from its last batch", async () => {
      const ids = await conversations(5);
      let dead = true;
      const { resealer, keyId, later } = await rotated(titles((id) => dead && id === ids[3]));
      await expect(resealer.run(acme, { now: later() })).rejects.toThrow("the process died here");
      dead = false;
      // Its lease still holds: another run does not walk the tenant at once.
      expect(await resealer.run(acme, { now: later(1_000) })).toEqual({ status: "busy" });
      const resumed = await resealer.run(acme, { now: later(11_000) });
      expect(resumed.status).toBe("done");
      expect(await underKey(ids, keyId)).toEqual(ids.map(() => true));
      if (resumed.status === "done") expect(resumed.job.counts.examined).toBe(5);
    });

    it("returns waiting under the current key when a later rotation left no job, and then re-seals under it", async () => {
      const ids = await conversations(2);
      const { resealer, later } = await rotated(titles(), new Date(Date.now() - MAX_AGE_MS * 2));
      // A rotation made around the resealer: the job still names the earlier key.
      const { keyId: latest } = await store.cipher.rotate(acme);
      const outcome = await resealer.run(acme, { now: later() });
      expect(outcome).toMatchObject({ status: "waiting" });
      expect(await resealer.status(acme)).toMatchObject({ keyId: latest, status: "pending", cursor: null });
      expect((await resealer.run(acme, { now: () => new Date(Date.now() + MAX_AGE_MS + 1_000) })).status).toBe("done");
      expect(await underKey(ids, latest)).toEqual([true, true]);
    });

    it("stops a run whose job a later rotation replaced; the later one re-seals under its own key", async () => {
      const ids = await conversations(4);
      let resealer: ContentResealer | undefined;
      let newer: string | undefined;
      const rotatesMidway: ResealWalker = {
        name: "titles",
        reseal: async (pass: ResealPass) =>
          titles().reseal({
            ...pass,
            onBatch: async (batch) => {
              if (!newer && resealer) {
                newer = (await store.cipher.rotate(acme, new Date(Date.now() - MAX_AGE_MS * 2))).keyId;
                await resealer.schedule(acme, newer, new Date(Date.now() - MAX_AGE_MS * 2));
              }
              return pass.onBatch(batch);
            },
          }),
      };
      const first = await rotated(rotatesMidway, new Date(Date.now() - MAX_AGE_MS * 3));
      resealer = first.resealer;
      expect((await resealer.run(acme)).status).toBe("paused");
      expect(await resealer.status(acme)).toMatchObject({ keyId: newer, status: "pending", cursor: null });
      expect((await resealer.run(acme)).status).toBe("done");
      expect(await underKey(ids, newer as string)).toEqual(ids.map(() => true));
    });
  });
});
