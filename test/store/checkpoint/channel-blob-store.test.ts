import { JsonPlusSerializer } from "@langchain/langgraph-checkpoint";
import { beforeAll, describe, expect, it } from "vitest";
import { ChannelVersionConflictError, DocumentTooLargeError } from "../../../lib/errors.js";
import { type BlobDocument, ChannelBlobStore } from "../../../lib/store/checkpoint/channel-blob-store.js";
import { COLLECTIONS } from "../../../lib/store/collections.js";
import { useTestDatabase } from "../../support/store-fixture.js";

const database = useTestDatabase("blob_store");
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

describe("ChannelBlobStore", () => {
  it("stores a list that extends a stored version as a link holding only the appended items", async () => {
    const blobs = store();
    await put(blobs, [{ channel: "messages", key: "1.5", list: ["q1", "a1"] }]);
    const [base] = (await blobs.listHeads(here, new Map([["messages", "1.5"]]))).values();
    await put(blobs, [{ channel: "messages", key: "2.5", list: ["q1", "a1", "q2"], base }]);
    const link = await collection().findOne({ ...here, channel: "messages", version: "2.5" });
    expect(link).toMatchObject({ base: "1.5", count: 3 });
    expect(link?.items).toHaveLength(1);
    expect((await blobs.reader().read(here, new Map([["messages", "2.5"]]))).values.messages).toEqual(["q1", "a1", "q2"]);
  });

  it("leaves a key stored again with the same value as it is, and throws ChannelVersionConflictError for another value", async () => {
    const blobs = store();
    await put(blobs, [{ channel: "summary", key: "1.5", serialized: await serialized("a") }]);
    await put(blobs, [{ channel: "summary", key: "1.5", serialized: await serialized("a") }]);
    await expect(put(blobs, [{ channel: "summary", key: "1.5", serialized: await serialized("b") }])).rejects.toBeInstanceOf(ChannelVersionConflictError);
    expect(await collection().countDocuments({ ...here, channel: "summary" })).toBe(1);
  });

  it("throws DocumentTooLargeError while preparing, before anything is written", async () => {
    const blobs = store({ maxDocumentBytes: 2_000 });
    await expect(
      blobs.prepare(here, [{ channel: "summary", key: "1.5", serialized: await serialized("x".repeat(5_000)) }], "checkpoint c1"),
    ).rejects.toBeInstanceOf(DocumentTooLargeError);
    expect(await collection().countDocuments({})).toBe(0);
  });

  it("returns which (channel, key) pairs are stored", async () => {
    const blobs = store();
    await put(blobs, [{ channel: "summary", key: "1.5", serialized: await serialized("a") }]);
    expect(
      await blobs.stored(here, [
        ["summary", "1.5"],
        ["summary", "2.5"],
      ]),
    ).toEqual(new Set(["summary\u00001.5"]));
  });

  it("deletes a thread's blobs in every namespace and keeps another thread's", async () => {
    const blobs = store();
    await put(blobs, [{ channel: "summary", key: "1.5", serialized: await serialized("a") }]);
    await blobs.write(await blobs.prepare({ thread_id: "t", checkpoint_ns: "sub" }, [{ channel: "s", key: "1", serialized: await serialized(1) }], "c"), {});
    await blobs.write(await blobs.prepare({ thread_id: "other", checkpoint_ns: "" }, [{ channel: "s", key: "1", serialized: await serialized(1) }], "c"), {});
    await blobs.deleteThread("t");
    expect(await collection().countDocuments({ thread_id: "t" })).toBe(0);
    expect(await collection().countDocuments({ thread_id: "other" })).toBe(1);
  });
});
