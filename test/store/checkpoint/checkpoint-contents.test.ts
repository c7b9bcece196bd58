import { randomBytes } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HumanMessage } from "@langchain/core/messages";
import { Binary } from "mongodb";
import { apiPrincipal } from "../../../lib/auth/principal.js";
import { isCiphertext } from "../../../lib/crypto/content-cipher.js";
import { FieldCipher } from "../../../lib/crypto/field-cipher.js";
import { LocalTenantKeys } from "../../../lib/crypto/local-tenant-keys.js";
import { ContentRefusedError, NotFoundError } from "../../../lib/errors.js";
import { CLEAR_DIGESTS, CheckpointContents, KEYED_DIGEST_PREFIX, checkpointRefs } from "../../../lib/store/checkpoint/checkpoint-contents.js";
import { nextDigest } from "../../../lib/store/checkpoint/list-links.js";
import { ThreadwiseDatabase } from "../../../lib/store/database.js";
import { useTestDatabase } from "../../support/store-fixture.js";
import { SAVER_COLLECTIONS, scriptedGraph } from "./saver-support.js";

const test = useTestDatabase("checkpoint_contents", { clearBeforeEach: false });
let keysDir: string;
const ref = checkpointRefs.blob("checkpoint_blobs", { thread_id: "t", checkpoint_ns: "" }, "summary", "1.5");
const bytes = new TextEncoder().encode('{"secret":true}');

beforeAll(async () => {
  keysDir = await mkdtemp(join(tmpdir(), "threadwise-contents-"));
});

function sealing(tenant = "acme", key = randomBytes(32)): CheckpointContents {
  const cipher = new FieldCipher({ keys: new LocalTenantKeys(keysDir), tenantOf: async () => ({ issuer: "api", tenant }) });
  return new CheckpointContents({ cipher, digestKeyOf: async () => key });
}

describe("CheckpointContents", () => {
  describe("seal", () => {
    it("returns the serialized bytes as they are (binary subtype 0) with encryption off", async () => {
      const stored = await new CheckpointContents().seal("t", ref, bytes);
      expect(stored.sub_type).toBe(0);
      expect(Buffer.from(stored.buffer).toString()).toBe('{"secret":true}');
    });

    it("returns a ciphertext that opens back to the bytes with encryption on", async () => {
      const contents = sealing();
      const stored = await contents.seal("t", ref, bytes);
      expect(isCiphertext(stored)).toBe(true);
      expect(Buffer.from(stored.buffer).includes(Buffer.from("secret"))).toBe(false);
      expect(Buffer.from(await contents.open("t", ref, stored)).toString()).toBe('{"secret":true}');
    });

    it("throws when the cipher is enabled and no digest key is given", () => {
      const cipher = new FieldCipher({ keys: new LocalTenantKeys(keysDir), tenantOf: async () => ({ issuer: "api", tenant: "acme" }) });
      expect(() => new CheckpointContents({ cipher })).toThrow(/digestKeyOf/);
    });
  });

  describe("open", () => {
    it("throws ContentRefusedError (plaintext) for clear bytes where ciphertext is expected", async () => {
      const error = await sealing()
        .open("t", ref, new Binary(bytes))
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ContentRefusedError);
      expect((error as ContentRefusedError).reason).toBe("plaintext");
    });

    it("throws ContentRefusedError (moved) for a ciphertext sealed for another place", async () => {
      const contents = sealing();
      const stored = await contents.seal("t", ref, bytes);
      const elsewhere = checkpointRefs.blob("checkpoint_blobs", { thread_id: "other", checkpoint_ns: "" }, "summary", "1.5");
      const error = await contents.open("other", elsewhere, stored).catch((e: unknown) => e);
      expect((error as ContentRefusedError).reason).toBe("moved");
    });

    it("throws ContentRefusedError (encryption_off) for a ciphertext read with encryption off", async () => {
      const stored = await sealing().seal("t", ref, bytes);
      const error = await new CheckpointContents().open("t", ref, stored).catch((e: unknown) => e);
      expect((error as ContentRefusedError).reason).toBe("encryption_off");
    });
  });

  describe("digests", () => {
    it("returns plain SHA-256 digests with encryption off, as releases before stored", async () => {
      const digests = await new CheckpointContents().digests("t");
      expect(digests).toBe(CLEAR_DIGESTS);
      expect(digests.next("0".repeat(64), { type: "json", bytes })).toBe(nextDigest("0".repeat(64), { type: "json", bytes }));
    });

    it("returns digests keyed per tenant with encryption on: marked, stable under one key, different under another", async () => {
      const key = randomBytes(32);
      const item = { type: "json", bytes };
      const [a, b, other] = await Promise.all([sealing("acme", key).digests("t"), sealing("acme", key).digests("u"), sealing("globex").digests("t")]);
      expect(a.value(item).startsWith(KEYED_DIGEST_PREFIX)).toBe(true);
      expect(a.value(item)).toBe(b.value(item));
      expect(a.next("0".repeat(64), item)).toBe(b.next("0".repeat(64), item));
      expect(other.value(item)).not.toBe(a.value(item));
      expect(a.value(item)).not.toBe(CLEAR_DIGESTS.value(item));
    });
  });

  describe("a thread without a conversation, encryption on", () => {
    it("throws NotFoundError naming the thread on the first put, and writes nothing", async () => {
      const database = new ThreadwiseDatabase(test.client, { dbName: test.dbName, contentKeys: new LocalTenantKeys(keysDir) });
      const graph = scriptedGraph(database.checkpointer);
      const error = await graph.invoke({ messages: [new HumanMessage("hello")] }, { configurable: { thread_id: "nobody" } }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(NotFoundError);
      expect((error as Error).message).toMatch(/thread nobody belongs to no conversation/);
      for (const name of SAVER_COLLECTIONS) expect(await test.db.collection(name).countDocuments({ thread_id: "nobody" }), name).toBe(0);
      // A conversation's thread is written sealed.
      const { _id } = await database.conversations.create(apiPrincipal("ada", "acme"));
      await graph.invoke({ messages: [new HumanMessage("hello")] }, { configurable: { thread_id: _id } });
      expect(isCiphertext((await test.db.collection("checkpoint_writes").findOne({ thread_id: _id }))?.value)).toBe(true);
    });
  });
});
