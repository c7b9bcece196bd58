import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Binary, Document } from "mongodb";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { apiPrincipal } from "../../lib/auth/principal.js";
import type { FieldRef } from "../../lib/crypto/content-cipher.js";
import { LocalTenantKeys } from "../../lib/crypto/local-tenant-keys.js";
import { CollectionResealWalker } from "../../lib/store/collection-reseal-walker.js";
import { COLLECTIONS } from "../../lib/store/collections.js";
import type { ResealBatch, ResealPass } from "../../lib/store/content-resealer.js";
import { ThreadwiseDatabase } from "../../lib/store/database.js";
import { useTestDatabase } from "../support/store-fixture.js";

const database = useTestDatabase("reseal_walker");
const acme = { issuer: "api" as const, tenant: "acme" };
const NOTES = "reseal_walker_notes";
let store: ThreadwiseDatabase;

/** A collection of notes sealed like a content field: `text`, bound to the note's id, under its conversation's tenant. */
async function writeNotes(conversationId: string, count: number): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, i) => `${conversationId}:${String(i).padStart(3, "0")}`);
  const docs = await Promise.all(
    ids.map(async (id) => ({ _id: id, conversationId, text: await store.cipher.sealText(conversationId, ref(id), `note ${id}`) })),
  );
  await database.db.collection<{ _id: string }>(NOTES).insertMany(docs);
  return ids;
}
const ref = (id: string): FieldRef => ({ collection: NOTES, id, field: "text" });

function walker(): CollectionResealWalker {
  return new CollectionResealWalker("notes", [
    { collection: database.db.collection(NOTES), fields: ["text"], owner: { kind: "conversation", conversationOf: (doc) => doc.conversationId } },
  ]);
}

/** A pass over acme with the database's cipher, recording its batches; `reseal` may be wrapped to act in between. */
function passOf(batches: ResealBatch[], reseal?: ResealPass["reseal"]): ResealPass {
  return {
    tenant: acme,
    // The collection walker re-seals through `reseal`, which reads the tenant's current key itself.
    keyId: "(not read by this walker)",
    after: undefined,
    batchSize: 4,
    ownedByTenant: async (ids) => {
      const owned = await database.db
        .collection<{ _id: string }>(COLLECTIONS.conversations)
        .find({ _id: { $in: [...ids] }, "owner.tenant": "acme" })
        .toArray();
      return new Set(owned.map((c) => c._id));
    },
    reseal: reseal ?? ((conversationId, r, stored) => store.cipher.reseal(conversationId, r, stored)),
    resealFor: (r, stored) => store.cipher.resealFor(acme, r, stored),
    onBatch: async (batch) => {
      batches.push(batch);
      return true;
    },
  };
}

const rawText = async (id: string) => (await database.db.collection<Document>(NOTES).findOne({ _id: id } as Document))?.text as Binary;

afterAll(() =>
  database.db
    .collection(NOTES)
    .drop()
    .catch(() => undefined),
);
beforeEach(async () => {
  await database.db.collection(NOTES).deleteMany({});
  store = new ThreadwiseDatabase(database.client, { dbName: database.dbName, contentKeys: new LocalTenantKeys(await mkdtemp(join(tmpdir(), "reseal-"))) });
});

describe("CollectionResealWalker", () => {
  describe("reseal", () => {
    it("re-seals the tenant's values under its new key in batches, and leaves another tenant's as they were", async () => {
      const { _id: ours } = await store.conversations.create(apiPrincipal("alice", "acme"));
      const { _id: theirs } = await store.conversations.create(apiPrincipal("eve", "globex"));
      const mine = await writeNotes(ours, 6);
      const others = await writeNotes(theirs, 3);
      const theirsBefore = await Promise.all(others.map(rawText));
      const { keyId } = await store.rotateTenantKey("api", "acme");
      const batches: ResealBatch[] = [];
      expect(await walker().reseal(passOf(batches))).toBe(true);
      expect(batches.map((b) => b.examined)).toEqual([4, 4, 1]);
      expect(batches.reduce((n, b) => n + b.resealed, 0)).toBe(6);
      for (const id of mine) {
        expect(Buffer.from((await rawText(id)).value()).includes(Buffer.from(keyId))).toBe(true);
        expect(await store.cipher.openText(ours, ref(id), await rawText(id))).toBe(`note ${id}`);
      }
      expect(await Promise.all(others.map(rawText))).toEqual(theirsBefore);
      // Idempotent: a second walk writes nothing.
      const again: ResealBatch[] = [];
      await walker().reseal(passOf(again));
      expect(again.reduce((n, b) => n + b.resealed, 0)).toBe(0);
    });

    it("does not overwrite a value a concurrent write changed between the read and the re-seal", async () => {
      const { _id: ours } = await store.conversations.create(apiPrincipal("alice", "acme"));
      const [first, second] = await writeNotes(ours, 2);
      await store.rotateTenantKey("api", "acme");
      let wrote = false;
      // A turn rewrites the first note (under the new key) after the walker read it and before it writes it back.
      const racing: ResealPass["reseal"] = async (conversationId, r, stored) => {
        if (r.id === first && !wrote) {
          wrote = true;
          const text = await store.cipher.sealText(conversationId, ref(first), "rewritten by a turn");
          await database.db.collection<Document>(NOTES).updateOne({ _id: first } as Document, { $set: { text } });
        }
        return store.cipher.reseal(conversationId, r, stored);
      };
      const batches: ResealBatch[] = [];
      await walker().reseal(passOf(batches, racing));
      expect(await store.cipher.openText(ours, ref(first), await rawText(first))).toBe("rewritten by a turn");
      expect(await store.cipher.openText(ours, ref(second), await rawText(second))).toBe(`note ${second}`);
      expect(batches[0]).toMatchObject({ raced: 1, resealed: 1 });
    });

    it("resumes after the cursor it is handed, in the collection it names", async () => {
      const { _id: ours } = await store.conversations.create(apiPrincipal("alice", "acme"));
      const ids = await writeNotes(ours, 5);
      const { keyId } = await store.rotateTenantKey("api", "acme");
      const batches: ResealBatch[] = [];
      await walker().reseal({ ...passOf(batches), after: { walker: "notes", collection: NOTES, lastId: ids[2] } });
      const under = await Promise.all(ids.map(async (id) => Buffer.from((await rawText(id)).value()).includes(Buffer.from(keyId))));
      expect(under).toEqual([false, false, false, true, true]);
    });
  });
});
