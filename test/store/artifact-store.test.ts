import { BSON } from "mongodb";
import { DocumentTooLargeError } from "../../lib/errors.js";
import { countTextTokens } from "../../lib/model-view/token-counter.js";
import { ArtifactStore, DEFAULT_ARTIFACT_PART_BYTES, DEFAULT_PREVIEW_CHARS, previewOf } from "../../lib/store/artifact-store.js";
import { heldFence, lostFence } from "../support/fences.js";
import { useStoreFixture } from "../support/store-fixture.js";
import { apiPrincipal, slackPrincipal } from "../../lib/auth/principal.js";

const alice = apiPrincipal("alice", "acme");
/** Reads as the principal the artifacts of `call` are made for. */
const asAlice = (conversationId: string) => ({ conversationId, reader: alice });

const {
  database,
  stores: { store },
} = useStoreFixture("artifacts", (db) => ({ store: new ArtifactStore(db) }));

let sequence = 0;
function call(overrides: Partial<{ conversationId: string; toolCallId: string; content: string }> = {}) {
  sequence += 1;
  return {
    conversationId: overrides.conversationId ?? `conv-${sequence}`,
    createdBy: alice,
    turnId: `turn-${sequence}`,
    toolCallId: overrides.toolCallId ?? `call-${sequence}`,
    toolName: "sql_query",
    content: overrides.content ?? `row ${sequence}\n`.repeat(300),
  };
}

/** Stores under a fence that holds: these tests are about storage, not fencing. */
const putIn = (target: ArtifactStore, artifact: ReturnType<typeof call>) => target.put(artifact, heldFence(artifact.conversationId));

describe("ArtifactStore", () => {
  describe("setup", () => {
    it("creates the conversation and parts indexes, and can run again", async () => {
      await store.setup();
      const names = (await store.collection.listIndexes().toArray()).map((index) => index.name);
      expect(names).toEqual(expect.arrayContaining(["conversation", "parts"]));
    });
  });

  describe("put", () => {
    it("returns a handle with the content's UTF-8 bytes, tokens and a preview", async () => {
      const content = `${"é".repeat(300)}\n${"ünïcödé line\n".repeat(100)}`;
      const ref = await putIn(store, call({ content }));
      expect(ref.handle).toMatch(/^art_[0-9a-f]{24}$/);
      expect(ref.bytes).toBe(Buffer.byteLength(content, "utf8"));
      expect(ref.bytes).toBeGreaterThan(content.length);
      expect(ref.tokens).toBe(countTextTokens(content));
      expect(ref.preview).toBe(`${content.slice(0, DEFAULT_PREVIEW_CHARS)}…`);
    });

    it("returns the first reference and keeps the first content when the same tool call is stored again", async () => {
      const first = call({ content: "first output\n".repeat(50) });
      const ref = await putIn(store, first);
      const retry = await putIn(store, { ...first, content: "a different output on retry" });
      expect(retry).toEqual(ref);
      expect((await store.get(ref.handle, asAlice(first.conversationId)))?.content).toBe(first.content);
      expect(await store.collection.countDocuments({ conversationId: first.conversationId })).toBe(1);
    });

    it("returns different handles for the same tool call id in two conversations", async () => {
      const a = await putIn(store, call({ toolCallId: "tooluse_same" }));
      const b = await putIn(store, call({ toolCallId: "tooluse_same" }));
      expect(a.handle).not.toBe(b.handle);
    });

    it("splits content over the part size across documents, each under the part size", async () => {
      const small = new ArtifactStore(database.db, { partBytes: 1_000 });
      // Three-byte characters, so part boundaries must fall between characters.
      const content = `${"日本語のテキスト".repeat(200)}\n${"x".repeat(2_500)}`;
      const input = call({ content });
      const ref = await putIn(small, input);
      const parts = await small.collection.find({ conversationId: input.conversationId, kind: "part" }).toArray();
      const sizes = parts.map((part) => Buffer.byteLength((part as { content: string }).content, "utf8"));
      expect(parts.length).toBeGreaterThanOrEqual(Math.ceil(ref.bytes / 1_000));
      expect(Math.max(...sizes)).toBeLessThanOrEqual(1_000);
      expect(sizes.reduce((a, b) => a + b, 0)).toBe(ref.bytes);
      expect((await small.get(ref.handle, asAlice(input.conversationId)))?.content).toBe(content);
    });

    it("keeps every document of a 10 MB output far below MongoDB's 16 MB limit", async () => {
      const line = JSON.stringify({ id: 1, customer: "Acme Corporation", revenue: 1234.5, region: "EMEA" });
      const content = `${line}\n`.repeat(Math.ceil((10 * 1024 * 1024) / (line.length + 1)));
      const input = { ...call({ content }), tokens: 1 };
      const ref = await putIn(store, input);
      const docs = await store.collection.find({ conversationId: input.conversationId }).toArray();
      expect(docs.length).toBe(Math.ceil(ref.bytes / DEFAULT_ARTIFACT_PART_BYTES) + 1);
      for (const doc of docs) expect(BSON.calculateObjectSize(doc)).toBeLessThan(DEFAULT_ARTIFACT_PART_BYTES + 1024);
      expect((await store.get(ref.handle, asAlice(input.conversationId)))?.content).toBe(content);
    });

    it("ignores the parts a failed earlier attempt left behind", async () => {
      const small = new ArtifactStore(database.db, { partBytes: 100 });
      const input = call({ content: "the real output, line by line\n".repeat(20) });
      const ref = await putIn(small, input);
      await small.collection.deleteOne({ _id: ref.handle });
      const retry = await putIn(small, { ...input, content: "the output of the retried call\n".repeat(20) });
      expect(retry.handle).toBe(ref.handle);
      expect((await small.get(ref.handle, asAlice(input.conversationId)))?.content).toBe("the output of the retried call\n".repeat(20));
    });

    it("throws DocumentTooLargeError with the size and the limit when the content is over the maximum", async () => {
      const limited = new ArtifactStore(database.db, { maxBytes: 1_000 });
      const input = call({ content: "y".repeat(1_001) });
      const error = await putIn(limited, input).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(DocumentTooLargeError);
      expect(error).toMatchObject({ bytes: 1_001, limit: 1_000 });
      expect(await limited.collection.countDocuments({ conversationId: input.conversationId })).toBe(0);
    });
  });

  describe("get", () => {
    it("returns the stored content and its metadata", async () => {
      const input = call();
      const ref = await putIn(store, input);
      const stored = await store.get(ref.handle, asAlice(input.conversationId));
      expect(stored).toMatchObject({ ...ref, ...input });
      expect(stored?.createdAt).toBeInstanceOf(Date);
    });

    it("returns undefined for a handle of another conversation", async () => {
      const input = call();
      const ref = await putIn(store, input);
      expect(await store.get(ref.handle, asAlice("another-conversation"))).toBeUndefined();
    });

    it("returns undefined to a reader of another issuer or tenant than the principal it was made for", async () => {
      const input = call();
      const ref = await putIn(store, input);
      expect(await store.get(ref.handle, { conversationId: input.conversationId, reader: apiPrincipal("alice", "globex") })).toBeUndefined();
      expect(await store.get(ref.handle, { conversationId: input.conversationId, reader: slackPrincipal("acme", "alice") })).toBeUndefined();
      expect(await store.get(ref.handle, { conversationId: input.conversationId, reader: apiPrincipal("bob", "acme") })).toBeDefined();
    });

    it("returns undefined for an unknown handle", async () => {
      expect(await store.get("art_000000000000000000000000", asAlice("conv-unknown"))).toBeUndefined();
    });

    it("returns undefined when a part is missing", async () => {
      const small = new ArtifactStore(database.db, { partBytes: 100 });
      const input = call({ content: "z".repeat(450) });
      const ref = await putIn(small, input);
      await small.collection.deleteOne({ conversationId: input.conversationId, kind: "part", index: 2 });
      expect(await small.get(ref.handle, asAlice(input.conversationId))).toBeUndefined();
    });
  });

  describe("put under a lost fence", () => {
    it("throws StaleWriterError and leaves neither head nor parts", async () => {
      const small = new ArtifactStore(database.db, { partBytes: 100 });
      const input = call({ content: "v".repeat(450) });
      await expect(small.put(input, lostFence(input.conversationId))).rejects.toMatchObject({ name: "StaleWriterError" });
      expect(await small.collection.countDocuments({ conversationId: input.conversationId })).toBe(0);
    });
  });

  describe("deleteByConversation", () => {
    it("removes the conversation's artifacts and their parts and keeps other conversations'", async () => {
      const small = new ArtifactStore(database.db, { partBytes: 100 });
      const gone = call({ content: "w".repeat(1_000) });
      const kept = call();
      const goneRef = await putIn(small, gone);
      await putIn(small, call({ conversationId: gone.conversationId }));
      const keptRef = await putIn(small, kept);
      await small.deleteByConversation(gone.conversationId);
      expect(await small.collection.countDocuments({ conversationId: gone.conversationId })).toBe(0);
      expect(await small.get(goneRef.handle, asAlice(gone.conversationId))).toBeUndefined();
      expect((await small.get(keptRef.handle, asAlice(kept.conversationId)))?.content).toBe(kept.content);
    });
  });
});

describe("previewOf", () => {
  it("returns short content unchanged", () => {
    expect(previewOf("short", 10)).toBe("short");
  });

  it("returns the first characters and an ellipsis without cutting a surrogate pair", () => {
    expect(previewOf("ab😀cd", 3)).toBe("ab…");
    expect(previewOf("abcdef", 3)).toBe("abc…");
  });
});
