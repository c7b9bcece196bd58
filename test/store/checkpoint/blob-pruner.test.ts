import { JsonPlusSerializer } from "@langchain/langgraph-checkpoint";
import { beforeAll, describe, expect, it } from "vitest";
import { StaleWriterError } from "../../../lib/errors.js";
import { type BlobDocument, ChannelBlobStore } from "../../../lib/store/checkpoint/channel-blob-store.js";
import { COLLECTIONS } from "../../../lib/store/collections.js";
import { useTestDatabase } from "../../support/store-fixture.js";

const database = useTestDatabase("blob_pruner");
const serde = new JsonPlusSerializer();
const collection = () => database.db.collection<BlobDocument>(COLLECTIONS.checkpointBlobs);
const store = (options: { linkBytes?: number } = {}) =>
  new ChannelBlobStore(collection(), serde, { maxDocumentBytes: 1_000_000, linkBytes: 1_000_000, ...options });
const here = { thread_id: "t", checkpoint_ns: "" };
const neverSealed = () => false;

beforeAll(async () => {
  await Promise.all(store().createIndexes());
});

async function serialized(value: unknown) {
  const [type, bytes] = await serde.dumpsTyped(value);
  return { type, bytes };
}

/** Stores the message list as three versions, each a link appending one item to the one before. */
async function threeLinks(blobs: ChannelBlobStore): Promise<void> {
  const lists = [["q1"], ["q1", "a1"], ["q1", "a1", "q2"]];
  for (const [i, list] of lists.entries()) {
    const base = i === 0 ? undefined : (await blobs.listHeads(here, new Map([["messages", `${i}.5`]]))).get("messages");
    await blobs.write(await blobs.prepare(here, [{ channel: "messages", key: `${i + 1}.5`, list, base }], "c"), {});
  }
}

describe("BlobPruner", () => {
  describe("prune", () => {
    it("removes the versions older than the newest kept one that no kept checkpoint reaches, and keeps newer ones", async () => {
      const blobs = store();
      for (const key of ["1.5", "2.5", "3.5"]) {
        await blobs.write(await blobs.prepare(here, [{ channel: "summary", key, serialized: await serialized(key) }], "c"), {});
      }
      const removed = await blobs.pruner().prune(here, [["summary", "2.5"]], neverSealed);
      expect(removed).toBe(1);
      expect(
        (
          await collection()
            .find({ ...here, channel: "summary" })
            .toArray()
        )
          .map((d) => d.version)
          .sort(),
      ).toEqual(["2.5", "3.5"]);
    });

    it("merges the links only a kept version builds on into that version, which reads the same list", async () => {
      const blobs = store();
      await threeLinks(blobs);
      await blobs.pruner().prune(here, [["messages", "3.5"]], neverSealed);
      const left = await collection()
        .find({ ...here, channel: "messages" })
        .toArray();
      expect(left.map((d) => d.version)).toEqual(["3.5"]);
      expect(left[0].base).toBeUndefined();
      expect((await blobs.reader().read(here, new Map([["messages", "3.5"]]))).values.messages).toEqual(["q1", "a1", "q2"]);
    });

    it("throws what the guard throws before its first write, removing nothing", async () => {
      const blobs = store();
      await threeLinks(blobs);
      const guard = async () => {
        throw new StaleWriterError("lease lost", "t", 1);
      };
      await expect(blobs.pruner().prune(here, [["messages", "3.5"]], neverSealed, { guard })).rejects.toBeInstanceOf(StaleWriterError);
      expect(await collection().countDocuments({ ...here, channel: "messages" })).toBe(3);
    });
  });

  describe("compactLists", () => {
    it("rewrites a list version stored whole as a link on the older version its list starts with", async () => {
      const blobs = store();
      await blobs.write(await blobs.prepare(here, [{ channel: "messages", key: "1.5", list: ["q1", "a1"] }], "c"), {});
      // Stored whole, as releases before list links stored every turn boundary.
      await blobs.write(await blobs.prepare(here, [{ channel: "messages", key: "2.5", list: ["q1", "a1", "q2", "a2"] }], "c"), {});
      const done = await blobs.pruner().compactLists(here);
      expect(done.rewritten).toBe(1);
      expect(await collection().findOne({ ...here, channel: "messages", version: "2.5" })).toMatchObject({ base: "1.5", count: 4 });
      expect(
        (
          await store()
            .reader()
            .read(here, new Map([["messages", "2.5"]]))
        ).values.messages,
      ).toEqual(["q1", "a1", "q2", "a2"]);
    });
  });
});
