import { emptyCheckpoint, JsonPlusSerializer } from "@langchain/langgraph-checkpoint";
import { Binary } from "mongodb";
import { describe, expect, it } from "vitest";
import { type CheckpointDocument, decodeHeader, HEADER_FORMAT, HEADER_TYPE_PREFIX } from "../../../lib/store/checkpoint/checkpoint-header.js";

const serde = new JsonPlusSerializer();

async function header(fields: Partial<CheckpointDocument>): Promise<CheckpointDocument> {
  const checkpoint = { ...emptyCheckpoint(), id: "c1", channel_versions: { messages: 3.5, summary: 2.25, cleared: 4.5 } };
  const [type, bytes] = await serde.dumpsTyped(checkpoint);
  const [, metadata] = await serde.dumpsTyped({ source: "loop", step: 1, parents: {} });
  return {
    thread_id: "t",
    checkpoint_ns: "",
    checkpoint_id: "c1",
    type,
    checkpoint: new Binary(bytes),
    metadata: new Binary(metadata),
    metadata_search: { source: "loop", step: 1, parents: {} },
    ...fields,
  };
}

describe("decodeHeader", () => {
  it("returns a current header's checkpoint and where each channel's value is: blob key, inline or absent", async () => {
    const doc = await header({ format: HEADER_FORMAT, blob_keys: { messages: "3.5#list" }, absent: ["cleared"] });
    doc.type = `${HEADER_TYPE_PREFIX}${doc.type}`;
    doc.inline_values = { summary: { type: "json", blob: new Binary(new Uint8Array([1])) } };
    const decoded = await decodeHeader(doc, serde);
    expect(decoded.format).toBe(HEADER_FORMAT);
    expect(decoded.checkpoint.id).toBe("c1");
    expect(decoded.metadata).toMatchObject({ source: "loop", step: 1 });
    expect([...decoded.keys]).toEqual([["messages", "3.5#list"]]);
    expect([...decoded.inline.keys()]).toEqual(["summary"]);
    expect([...decoded.absent]).toEqual(["cleared"]);
  });

  it("returns a legacy header (no format) as format 0, every channel's value under its version", async () => {
    const decoded = await decodeHeader(await header({}), serde);
    expect(decoded.format).toBe(0);
    expect(Object.fromEntries(decoded.keys)).toEqual({ messages: "3.5", summary: "2.25", cleared: "4.5" });
  });

  it("reads a legacy header's type as it is, even when it starts with the prefix", async () => {
    const doc = await header({});
    doc.type = `${HEADER_TYPE_PREFIX}${doc.type}`;
    await expect(decodeHeader(doc, serde)).rejects.toThrow();
  });
});
