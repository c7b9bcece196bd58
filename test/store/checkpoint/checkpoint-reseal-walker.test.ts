import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Binary } from "mongodb";
import { beforeAll, describe, expect, it } from "vitest";
import { apiPrincipal } from "../../../lib/auth/principal.js";
import { LocalTenantKeys } from "../../../lib/crypto/local-tenant-keys.js";
import { CheckpointResealWalker, type ResealableCheckpoints } from "../../../lib/store/checkpoint/checkpoint-reseal-walker.js";
import type { NeedsReseal } from "../../../lib/store/checkpoint/checkpoint-resealer.js";
import { COLLECTIONS } from "../../../lib/store/collections.js";
import type { ResealBatch, ResealPass } from "../../../lib/store/content-resealer.js";
import { ThreadwiseDatabase } from "../../../lib/store/database.js";
import { useTestDatabase } from "../../support/store-fixture.js";

const database = useTestDatabase("checkpoint_reseal_walker", { clearBeforeEach: false });
const acme = { issuer: "api" as const, tenant: "acme" };
let store: ThreadwiseDatabase;
let ours: string[];
let theirs: string;
const current = async () => (await store.cipher.currentKey(acme)) ?? "";

/** The saver's walk, recording which threads it was asked for and what its predicate selects of a value sealed before the rotation. */
function recording(sealedBefore: Binary, sealedAfter: Binary): { checkpoints: ResealableCheckpoints; threads: string[]; selected: boolean[] } {
  const threads: string[] = [];
  const selected: boolean[] = [];
  return {
    threads,
    selected,
    checkpoints: {
      async resealStoredCheckpoints(needsReseal: NeedsReseal, options: { threadId?: string }) {
        threads.push(options.threadId ?? "(all)");
        const where = { collection: COLLECTIONS.checkpointBlobs, id: "x", field: "value", threadId: options.threadId ?? "" };
        selected.push(needsReseal(sealedBefore, where), needsReseal(sealedAfter, where));
        return { resealed: 1, documents: 1, orphaned: 0, changed: 0 };
      },
    },
  };
}

function passOf(keyId: string, batches: ResealBatch[], after?: ResealPass["after"], stopAfter = Number.POSITIVE_INFINITY): ResealPass {
  return {
    tenant: acme,
    keyId,
    after,
    batchSize: 2,
    ownedByTenant: async (ids) => {
      const owned = await database.db
        .collection<{ _id: string }>(COLLECTIONS.conversations)
        .find({ _id: { $in: [...ids] }, "owner.tenant": "acme" })
        .toArray();
      return new Set(owned.map((c) => c._id));
    },
    reseal: async () => undefined,
    resealFor: async () => undefined,
    onBatch: async (batch) => {
      batches.push(batch);
      return batches.length < stopAfter;
    },
  };
}

beforeAll(async () => {
  store = new ThreadwiseDatabase(database.client, { dbName: database.dbName, contentKeys: new LocalTenantKeys(await mkdtemp(join(tmpdir(), "ckpt-walker-"))) });
  ours = [];
  for (let i = 0; i < 3; i++) ours.push((await store.conversations.create(apiPrincipal(`u${i}`, "acme")))._id);
  theirs = (await store.conversations.create(apiPrincipal("eve", "globex")))._id;
});

describe("CheckpointResealWalker", () => {
  it("walks the tenant's threads only, in _id order, choosing the values an earlier key sealed by their header", async () => {
    const ref = { collection: COLLECTIONS.checkpointBlobs, id: "x", field: "value" };
    const before = (await store.cipher.sealBytes(ours[0], ref, Buffer.from("old"))) as Binary;
    await store.cipher.rotate(acme);
    const after = (await store.cipher.sealBytes(ours[0], ref, Buffer.from("new"))) as Binary;
    const saver = recording(before, after);
    const batches: ResealBatch[] = [];
    expect(
      await new CheckpointResealWalker(database.db.collection(COLLECTIONS.conversations), saver.checkpoints, store.cipher).reseal(
        passOf(await current(), batches),
      ),
    ).toBe(true);
    expect(saver.threads).toEqual([...ours].sort());
    expect(saver.threads).not.toContain(theirs);
    // The value sealed before the rotation is chosen, the one after it is not.
    expect(saver.selected.every((s, i) => s === (i % 2 === 0))).toBe(true);
    expect(batches.every((b) => b.walker === "checkpoints" && b.collection === COLLECTIONS.checkpoints)).toBe(true);
    expect(batches.reduce((n, b) => n + b.resealed, 0)).toBe(3);
  });

  it("stops where the pass says and resumes with the thread after its cursor", async () => {
    const ref = { collection: COLLECTIONS.checkpointBlobs, id: "x", field: "value" };
    const sealed = (await store.cipher.sealBytes(ours[0], ref, Buffer.from("v"))) as Binary;
    const walker = (saver: ResealableCheckpoints) => new CheckpointResealWalker(database.db.collection(COLLECTIONS.conversations), saver, store.cipher);
    const first = recording(sealed, sealed);
    const batches: ResealBatch[] = [];
    expect(await walker(first.checkpoints).reseal(passOf(await current(), batches, undefined, 1))).toBe(false);
    const cursor = { walker: "checkpoints", collection: COLLECTIONS.checkpoints, lastId: batches[0].lastId };
    const rest = recording(sealed, sealed);
    expect(await walker(rest.checkpoints).reseal(passOf(await current(), [], cursor))).toBe(true);
    // Every thread of the tenant walked once across the two runs.
    expect([...first.threads, ...rest.threads]).toEqual([...ours].sort());
  });
});
