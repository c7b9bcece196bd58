import { describe, expect, it } from "vitest";
import type { FencedDocument } from "../../lib/store/write-fence.js";
import { WriteFence } from "../../lib/store/write-fence.js";
import { heldFence, lostFence } from "../support/fences.js";
import { useTestDatabase } from "../support/store-fixture.js";

interface Note extends FencedDocument {
  text: string;
}

const database = useTestDatabase("fence");
const notes = () => database.db.collection<Note>("follow_ups");

describe("WriteFence", () => {
  describe("guard", () => {
    it("returns the write's result while the fence holds", async () => {
      await expect(heldFence("c").guard(async () => 42)).resolves.toBe(42);
    });

    it("takes the write back with its result and throws StaleWriterError when the fence is lost", async () => {
      const undone: number[] = [];
      const guarded = lostFence("c").guard(
        async () => 7,
        async (result) => undone.push(result),
      );
      await expect(guarded).rejects.toMatchObject({ name: "StaleWriterError", threadId: "c" });
      expect(undone).toEqual([7]);
    });

    it("throws StaleWriterError when the fence is lost and there is nothing to take back", async () => {
      await expect(lostFence("c").guard(async () => 7)).rejects.toMatchObject({ name: "StaleWriterError" });
    });
  });

  describe("stale", () => {
    it("returns an error naming the conversation and epoch, with the cause when there is one", () => {
      const cause = new Error("lease lost");
      const error = heldFence("c-stale", 4).stale(cause);
      expect(error).toMatchObject({ name: "StaleWriterError", threadId: "c-stale", cause });
      expect(error.message).toBe("conversation c-stale is no longer held by this turn (epoch 4)");
      const bare = new WriteFence("c-bare", undefined, undefined, new Date(), async () => true).stale();
      expect(bare.message).toBe("conversation c-bare is no longer held by this turn (epoch none)");
      expect("cause" in bare).toBe(false);
    });
  });

  describe("insertOnce", () => {
    it("writes the document once, with the fence's expiry and attempt, and a retry changes nothing", async () => {
      const fence = heldFence("c-once", 3);
      await fence.insertOnce(notes(), { _id: "once", text: "first" });
      await fence.insertOnce(notes(), { _id: "once", text: "retry" });
      expect(await notes().findOne({ _id: "once" })).toEqual({ _id: "once", text: "first", attempt: 3, expiresAt: fence.expiresAt });
    });

    it("removes its own document when the fence is lost", async () => {
      await expect(lostFence("c-lost", 4).insertOnce(notes(), { _id: "lost", text: "late" })).rejects.toMatchObject({
        name: "StaleWriterError",
      });
      expect(await notes().countDocuments({ _id: "lost" })).toBe(0);
    });

    it("records a newer attempt that writes the document again, and keeps the newest", async () => {
      await heldFence("c-again", 3).insertOnce(notes(), { _id: "again", text: "first" });
      await heldFence("c-again", 5).insertOnce(notes(), { _id: "again", text: "retry" });
      await heldFence("c-again", 4).insertOnce(notes(), { _id: "again", text: "late" });
      expect(await notes().findOne({ _id: "again" })).toMatchObject({ text: "first", attempt: 5 });
    });

    it("leaves a newer attempt's document alone when an older attempt takes its write back", async () => {
      await heldFence("c-newer", 5).insertOnce(notes(), { _id: "shared", text: "newer" });
      await expect(lostFence("c-newer", 4).insertOnce(notes(), { _id: "shared", text: "older" })).rejects.toMatchObject({
        name: "StaleWriterError",
      });
      expect(await notes().findOne({ _id: "shared" })).toMatchObject({ text: "newer", attempt: 5 });
    });
  });
});
