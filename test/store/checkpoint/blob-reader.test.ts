import { JsonPlusSerializer } from "@langchain/langgraph-checkpoint";
import { beforeAll, describe, expect, it } from "vitest";
import { ChannelValueMissingError } from "../../../lib/errors.js";
import { type BlobDocument, ChannelBlobStore } from "../../../lib/store/checkpoint/channel-blob-store.js";
import { COLLECTIONS } from "../../../lib/store/collections.js";
import { useTestDatabase } from "../../support/store-fixture.js";

const database = useTestDatabase("blob_reader");
const serde = new JsonPlusSerializer();
const collection = () => database.db.collection<BlobDocument>(COLLECTIONS.checkpointBlobs);
const store = (options: { maxDocumentBytes?: number; linkBytes?: number } = {}) =>
  new ChannelBlobStore(collection(), serde, { maxDocumentBytes: 1_000_000, linkBytes: 1_000_000, ...options });
const here = { thread_id: "t", checkpoint_ns: "" };

// The unique key a second writer of a version meets (the saver's setup() makes it).
beforeAll(async () => {
  await Promise.all(store().createIndexes());
});

async function put(blobs: ChannelBlobStore, writes: Parameters<ChannelBlobStore["prepare"]>[1]): Promise<void> {
  await blobs.write(await blobs.prepare(here, writes, "checkpoint c1"), {});
}

async function serialized(value: unknown) {
  const [type, bytes] = await serde.dumpsTyped(value);
  return { type, bytes };
}

describe("BlobReader", () => {
  describe("read", () => {
    it("returns each value stored under its key, and names the channels whose key is not stored", async () => {
      const blobs = store();
      await put(blobs, [
        { channel: "summary", key: "1.5", serialized: await serialized({ text: "so far" }) },
        { channel: "messages", key: "1.5", list: ["q1", "a1"] },
      ]);
      const read = await blobs.reader().read(
        here,
        new Map([
          ["summary", "1.5"],
          ["messages", "1.5"],
          ["notes", "9.1"],
        ]),
      );
      expect(read).toEqual({ values: { summary: { text: "so far" }, messages: ["q1", "a1"] }, missing: ["notes"] });
    });

    it("throws ChannelValueMissingError reading a list version whose base is gone", async () => {
      const blobs = store();
      await put(blobs, [{ channel: "messages", key: "1.5", list: ["q1"] }]);
      const [base] = (await blobs.listHeads(here, new Map([["messages", "1.5"]]))).values();
      await put(blobs, [{ channel: "messages", key: "2.5", list: ["q1", "a1"], base }]);
      await collection().deleteOne({ ...here, channel: "messages", version: "1.5" });
      await expect(
        store()
          .reader()
          .read(here, new Map([["messages", "2.5"]])),
      ).rejects.toBeInstanceOf(ChannelValueMissingError);
    });
  });
});
