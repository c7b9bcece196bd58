import { describe, expect, it } from "vitest";
import { DEFAULT_API_IDEMPOTENCY_KEY_PREFIX, IdempotentRequests } from "../../lib/api/idempotent-requests.js";
import { ConflictError, IdempotencyKeyReusedError } from "../../lib/errors.js";
import { COLLECTIONS } from "../../lib/store/collections.js";
import type { IdempotencyDocument } from "../../lib/store/idempotency-persistence-layer.js";
import { Gate } from "../support/gate.js";
import { useStoreFixture } from "../support/store-fixture.js";

const { stores, database } = useStoreFixture("idempotent_requests", (db) => ({
  requests: new IdempotentRequests({ collection: db.collection<IdempotencyDocument>(COLLECTIONS.idempotency) }),
}));
const { requests } = stores;

describe("IdempotentRequests", () => {
  describe("run", () => {
    it("returns the first response to a repeat with the same key and body, without running the work again", async () => {
      let runs = 0;
      const work = async () => ({ turnId: `t${++runs}` });
      expect(await requests.run(["alice", "c1"], "k1", '{"content":"hi"}', work)).toEqual({ turnId: "t1" });
      expect(await requests.run(["alice", "c1"], "k1", '{"content":"hi"}', work)).toEqual({ turnId: "t1" });
      expect(runs).toBe(1);
    });

    it("runs the work again for the same key in another scope (another caller or conversation)", async () => {
      let runs = 0;
      const work = async () => ++runs;
      await requests.run(["alice", "c1"], "k1", "body", work);
      expect(await requests.run(["bob", "c1"], "k1", "body", work)).toBe(2);
      expect(await requests.run(["alice", "c2"], "k1", "body", work)).toBe(3);
    });

    it("throws IdempotencyKeyReusedError for the same key with another body", async () => {
      await requests.run(["alice"], "k1", '{"content":"hi"}', async () => "first");
      await expect(requests.run(["alice"], "k1", '{"content":"bye"}', async () => "second")).rejects.toBeInstanceOf(IdempotencyKeyReusedError);
    });

    it("throws ConflictError, retry after 1 s, for a repeat while the first is still running", async () => {
      const gate = new Gate();
      const first = requests.run(["alice"], "k1", "body", async () => {
        await gate.pass();
        return "first";
      });
      await gate.reached;
      const error = await requests.run(["alice"], "k1", "body", async () => "second").catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ConflictError);
      expect(error).toMatchObject({ retryAfterSeconds: 1, message: "a request with this Idempotency-Key is still in progress" });
      gate.open();
      expect(await first).toBe("first");
    });

    it("throws the work's own error, and keeps no record of it, so a retry runs again", async () => {
      await expect(requests.run(["alice"], "k1", "body", () => Promise.reject(new Error("model down")))).rejects.toThrow("model down");
      expect(await requests.run(["alice"], "k1", "body", async () => "retried")).toBe("retried");
    });

    it("stores its records under the API's key prefix, expiring after a day by default", async () => {
      const before = Date.now();
      await requests.run(["alice"], "k1", "body", async () => "ok");
      const [record] = await database.db.collection<IdempotencyDocument>(COLLECTIONS.idempotency).find({}).toArray();
      expect(String(record._id).startsWith(DEFAULT_API_IDEMPOTENCY_KEY_PREFIX)).toBe(true);
      expect(record.expiresAt.getTime() - before).toBeGreaterThan(23 * 3600 * 1000);
      expect(record.expiresAt.getTime() - before).toBeLessThanOrEqual(24 * 3600 * 1000 + 60_000);
    });
  });

  describe("start", () => {
    it("returns once the work began, before it ends, with its outcome in running", async () => {
      const gate = new Gate();
      const { running } = await requests.start(["alice"], "k1", "body", async () => {
        await gate.pass();
        return "done";
      });
      await gate.reached;
      gate.open();
      expect(await running).toBe("done");
    });

    it("returns the first response in running to a repeat with the same key and body, without running the work again", async () => {
      await requests.run(["alice"], "k1", "body", async () => "first");
      const { running } = await requests.start(["alice"], "k1", "body", async () => "second");
      expect(await running).toBe("first");
    });

    it("throws IdempotencyKeyReusedError for the same key with another body, and runs nothing", async () => {
      await requests.run(["alice"], "k1", "body", async () => "first");
      let ran = false;
      const work = async () => {
        ran = true;
        return "second";
      };
      await expect(requests.start(["alice"], "k1", "other body", work)).rejects.toBeInstanceOf(IdempotencyKeyReusedError);
      expect(ran).toBe(false);
    });

    it("throws ConflictError for a repeat while the first is still running", async () => {
      const gate = new Gate();
      const first = requests.run(["alice"], "k1", "body", async () => {
        await gate.pass();
        return "first";
      });
      await gate.reached;
      await expect(requests.start(["alice"], "k1", "body", async () => "second")).rejects.toBeInstanceOf(ConflictError);
      gate.open();
      await first;
    });
  });
});
