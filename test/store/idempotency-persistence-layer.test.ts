import {
  IdempotencyAlreadyInProgressError,
  IdempotencyConfig,
  IdempotencyItemAlreadyExistsError,
  IdempotencyItemNotFoundError,
  IdempotencyRecordStatus,
  IdempotencyValidationError,
  makeIdempotent,
} from "@aws-lambda-powertools/idempotency";
import { IdempotencyRecord } from "@aws-lambda-powertools/idempotency/persistence";
import { beforeEach, describe, expect, it } from "vitest";
import { COLLECTIONS } from "../../lib/store/collections.js";
import { IdempotencyPersistenceLayer, type IdempotencyDocument } from "../../lib/store/idempotency-persistence-layer.js";
import { useTestDatabase } from "../support/store-fixture.js";

/** Reaches the protected primitives the way Powertools does, without going through a handler. */
class ExposedLayer extends IdempotencyPersistenceLayer {
  put(record: IdempotencyRecord) {
    return this._putRecord(record);
  }
  get(key: string) {
    return this._getRecord(key);
  }
}

const nowSeconds = () => Math.round(Date.now() / 1000);

function inProgress(key: string, fields: Partial<IdempotencyRecord> = {}) {
  return new IdempotencyRecord({
    idempotencyKey: key,
    status: IdempotencyRecordStatus.INPROGRESS,
    expiryTimestamp: nowSeconds() + 3600,
    inProgressExpiryTimestamp: Date.now() + 60_000,
    ...fields,
  });
}

describe("IdempotencyPersistenceLayer", () => {
  const t = useTestDatabase("idem");
  const collection = t.db.collection<IdempotencyDocument>(COLLECTIONS.idempotency);
  let layer: ExposedLayer;

  beforeEach(() => {
    // Unconfigured: Powertools configures a layer once, on its first idempotent call.
    layer = new ExposedLayer({ collection });
  });

  describe("setup", () => {
    it("creates a TTL index on expiresAt", async () => {
      await layer.setup();
      await layer.setup();
      const indexes = await collection.listIndexes().toArray();
      const ttl = indexes.find((i) => i.key?.expiresAt === 1);
      expect(ttl?.expireAfterSeconds).toBe(0);
    });
  });

  describe("_putRecord", () => {
    it("returns when no record exists and stores it in progress", async () => {
      await layer.put(inProgress("k1"));
      const doc = await collection.findOne({ _id: "k1" });
      expect(doc?.status).toBe(IdempotencyRecordStatus.INPROGRESS);
      expect(doc?.expiresAt).toBeInstanceOf(Date);
    });

    it("throws IdempotencyItemAlreadyExistsError carrying the existing record", async () => {
      await layer.put(inProgress("k1"));
      const error = await layer.put(inProgress("k1")).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(IdempotencyItemAlreadyExistsError);
      expect((error as IdempotencyItemAlreadyExistsError).existingRecord?.getStatus()).toBe(IdempotencyRecordStatus.INPROGRESS);
    });

    it("lets exactly one of many racing writers win", async () => {
      const outcomes = await Promise.allSettled(Array.from({ length: 8 }, () => layer.put(inProgress("race"))));
      expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(1);
      const reasons = outcomes.filter((o) => o.status === "rejected").map((o) => (o as PromiseRejectedResult).reason);
      expect(reasons.every((e: unknown) => e instanceof IdempotencyItemAlreadyExistsError)).toBe(true);
    });

    it("returns after inserting when the colliding record is deleted before it can be read", async () => {
      await layer.put(inProgress("vanishing"));
      // Its owner fails and deletes it right after our insert collided with it.
      let deleted = false;
      const racing = new Proxy(collection, {
        get(target, prop, receiver) {
          if (prop === "updateOne" && !deleted) {
            return async (...args: Parameters<typeof target.updateOne>) => {
              deleted = true;
              await target.deleteOne({ _id: "vanishing" });
              return target.updateOne(...args);
            };
          }
          const value = Reflect.get(target, prop, receiver);
          return typeof value === "function" ? value.bind(target) : value;
        },
      });
      const raced = new ExposedLayer({ collection: racing });
      await expect(raced.put(inProgress("vanishing"))).resolves.toBeUndefined();
      expect(await collection.countDocuments({ _id: "vanishing" })).toBe(1);
    });

    it("takes over a record whose expiry has passed", async () => {
      await layer.put(inProgress("old", { expiryTimestamp: nowSeconds() - 10 }));
      await layer.put(inProgress("old"));
      const doc = await collection.findOne({ _id: "old" });
      expect(doc?.expiryTimestamp).toBeGreaterThan(nowSeconds());
    });

    it("takes over an in-progress record whose in-progress expiry has passed", async () => {
      await layer.put(inProgress("crashed", { inProgressExpiryTimestamp: Date.now() - 1 }));
      await expect(layer.put(inProgress("crashed"))).resolves.toBeUndefined();
    });

    it("throws when a completed record has not expired, even past its in-progress expiry", async () => {
      await layer.put(inProgress("done", { inProgressExpiryTimestamp: Date.now() - 1 }));
      await collection.updateOne({ _id: "done" }, { $set: { status: IdempotencyRecordStatus.COMPLETED } });
      await expect(layer.put(inProgress("done"))).rejects.toBeInstanceOf(IdempotencyItemAlreadyExistsError);
    });
  });

  describe("_getRecord", () => {
    it("throws IdempotencyItemNotFoundError for an unknown key", async () => {
      await expect(layer.get("missing")).rejects.toBeInstanceOf(IdempotencyItemNotFoundError);
    });
  });

  describe("with makeIdempotent", () => {
    it("returns the stored result on a repeat and runs the function once", async () => {
      let runs = 0;
      const fn = makeIdempotent(async (event: { id: string; n: number }) => ({ runs: ++runs, echo: event.n, $ref: "kept" }), {
        persistenceStore: layer,
        keyPrefix: "test",
        config: new IdempotencyConfig({ eventKeyJmesPath: "id" }),
      });
      const first = await fn({ id: "a", n: 1 });
      const second = await fn({ id: "a", n: 1 });
      expect(second).toEqual(first);
      expect(runs).toBe(1);
      const doc = await collection.findOne({});
      expect(doc?._id.startsWith("test#")).toBe(true);
      expect(doc?.status).toBe(IdempotencyRecordStatus.COMPLETED);
    });

    it("throws IdempotencyValidationError when the validated part of the payload differs", async () => {
      const fn = makeIdempotent(async (event: { id: string; body: string }) => event.body.length, {
        persistenceStore: layer,
        keyPrefix: "test",
        config: new IdempotencyConfig({ eventKeyJmesPath: "id", payloadValidationJmesPath: "body" }),
      });
      await fn({ id: "v", body: "first" });
      await expect(fn({ id: "v", body: "second" })).rejects.toBeInstanceOf(IdempotencyValidationError);
    });

    it("throws IdempotencyAlreadyInProgressError while the first call runs", async () => {
      let release: () => void = () => undefined;
      const gate = new Promise<void>((r) => (release = r));
      let entered: () => void = () => undefined;
      // The function body runs only once the in-progress record is saved: from then on the key is taken.
      const running = new Promise<void>((r) => (entered = r));
      const fn = makeIdempotent(
        async (event: { id: string }, _ctx: { getRemainingTimeInMillis(): number }) => {
          entered();
          await gate;
          return event.id;
        },
        { persistenceStore: layer, keyPrefix: "test", config: new IdempotencyConfig({ eventKeyJmesPath: "id" }) },
      );
      const ctx = { getRemainingTimeInMillis: () => 30_000 };
      const first = fn({ id: "p" }, ctx);
      await running;
      await expect(fn({ id: "p" }, ctx)).rejects.toBeInstanceOf(IdempotencyAlreadyInProgressError);
      release();
      await expect(first).resolves.toBe("p");
    });

    it("deletes the record when the function throws, so a retry runs again", async () => {
      let runs = 0;
      const fn = makeIdempotent(
        async (event: { id: string }) => {
          runs++;
          if (runs === 1) throw new Error("boom");
          return event.id;
        },
        { persistenceStore: layer, keyPrefix: "test", config: new IdempotencyConfig({ eventKeyJmesPath: "id" }) },
      );
      await expect(fn({ id: "e" })).rejects.toThrow("boom");
      await expect(fn({ id: "e" })).resolves.toBe("e");
      expect(runs).toBe(2);
    });
  });
});
