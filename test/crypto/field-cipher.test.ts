import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Binary } from "mongodb";
import { describe, expect, it } from "vitest";
import { CLEAR_FIELDS } from "../../lib/crypto/clear-field-cipher.js";
import type { FieldRef } from "../../lib/crypto/content-cipher.js";
import { FieldCipher } from "../../lib/crypto/field-cipher.js";
import { LocalTenantKeys } from "../../lib/crypto/local-tenant-keys.js";
import type { TenantRef } from "../../lib/crypto/tenant-keys.js";
import { ContentRefusedError } from "../../lib/errors.js";

const ACME: TenantRef = { issuer: "api", tenant: "acme" };
const GLOBEX: TenantRef = { issuer: "api", tenant: "globex" };
const owners: Record<string, TenantRef> = { c1: ACME, c2: ACME, g1: GLOBEX };
const ref = (id: string, field = "content"): FieldRef => ({ collection: "messages", id, field });
const MARKER = "MARKER-7f3a the quarterly numbers";

async function cipherOver(dir?: string): Promise<{ cipher: FieldCipher; keys: LocalTenantKeys; dir: string }> {
  const keysDir = dir ?? (await mkdtemp(join(tmpdir(), "threadwise-field-cipher-")));
  const keys = new LocalTenantKeys(keysDir);
  return { cipher: new FieldCipher({ keys, tenantOf: async (id) => owners[id] }), keys, dir: keysDir };
}

async function refusal(promise: Promise<unknown>): Promise<ContentRefusedError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ContentRefusedError);
  return error as ContentRefusedError;
}

describe("FieldCipher", () => {
  describe("sealText", () => {
    it("returns an AWS Encryption SDK message in which the text is not in clear", async () => {
      const { cipher } = await cipherOver();
      const sealed = await cipher.sealText("c1", ref("t1:user"), MARKER);
      expect(sealed).toBeInstanceOf(Binary);
      const bytes = Buffer.from((sealed as Binary).buffer);
      expect(bytes.includes(Buffer.from("MARKER-7f3a"))).toBe(false);
      // Message format version 2 (key commitment) with the tenant and collection in its context.
      expect(bytes[0]).toBe(2);
      expect(bytes.includes(Buffer.from('["api","acme"]'))).toBe(true);
    });

    it("returns the text itself when encryption is off", async () => {
      expect(await CLEAR_FIELDS.sealText("c1", ref("t1:user"), MARKER)).toBe(MARKER);
    });
  });

  describe("openText", () => {
    it("returns the text sealed for the same document and field", async () => {
      const { cipher } = await cipherOver();
      const sealed = await cipher.sealText("c1", ref("t1:user"), MARKER);
      expect(await cipher.openText("c1", ref("t1:user"), sealed)).toBe(MARKER);
    });

    it("throws `moved` for a ciphertext copied to another document of the same tenant", async () => {
      const { cipher } = await cipherOver();
      const sealed = await cipher.sealText("c1", ref("t1:user"), MARKER);
      expect((await refusal(cipher.openText("c2", ref("t9:user"), sealed))).reason).toBe("moved");
    });

    it("throws `moved` for a ciphertext copied to another field or collection", async () => {
      const { cipher } = await cipherOver();
      const sealed = await cipher.sealText("c1", ref("t1:user"), MARKER);
      expect((await refusal(cipher.openText("c1", ref("t1:user", "answer"), sealed))).reason).toBe("moved");
      expect((await refusal(cipher.openText("c1", { collection: "turns", id: "t1:user", field: "content" }, sealed))).reason).toBe("moved");
    });

    it("throws `undecryptable` for a ciphertext copied into another tenant's conversation", async () => {
      const { cipher } = await cipherOver();
      const sealed = await cipher.sealText("c1", ref("t1:user"), MARKER);
      const error = await refusal(cipher.openText("g1", ref("t1:user"), sealed));
      expect(error.reason).toBe("undecryptable");
      expect(error.message).not.toContain("MARKER");
    });

    it("throws `plaintext` for a clear value where ciphertext is expected, without returning it", async () => {
      const { cipher } = await cipherOver();
      expect((await refusal(cipher.openText("c1", ref("t1:user"), MARKER))).reason).toBe("plaintext");
    });

    it("throws `encryption_off` for a ciphertext read with encryption off", async () => {
      const { cipher } = await cipherOver();
      const sealed = await cipher.sealText("c1", ref("t1:user"), MARKER);
      expect((await refusal(CLEAR_FIELDS.openText("c1", ref("t1:user"), sealed))).reason).toBe("encryption_off");
    });
  });

  describe("sealJson", () => {
    it("round-trips a JSON value, and keeps it as it is with encryption off", async () => {
      const { cipher } = await cipherOver();
      const value = [{ role: "user", content: MARKER }];
      expect(await cipher.openJson("c1", ref("a", "view"), await cipher.sealJson("c1", ref("a", "view"), value))).toEqual(value);
      expect(await CLEAR_FIELDS.sealJson("c1", ref("a", "view"), value)).toBe(value);
    });
  });

  describe("rotate", () => {
    it("encrypts new values under the new key while values of the old key stay readable", async () => {
      const { cipher } = await cipherOver();
      const before = await cipher.sealText("c1", ref("t1:user"), "before");
      const { keyId } = await cipher.rotate(ACME);
      const after = await cipher.sealText("c1", ref("t2:user"), "after");
      expect(Buffer.from((after as Binary).buffer).includes(Buffer.from(keyId))).toBe(true);
      expect(Buffer.from((before as Binary).buffer).includes(Buffer.from(keyId))).toBe(false);
      expect(await cipher.openText("c1", ref("t1:user"), before)).toBe("before");
      expect(await cipher.openText("c1", ref("t2:user"), after)).toBe("after");
    });

    it("is picked up by another process, which reloads the tenant's keys to read a value of the new key", async () => {
      const { cipher, dir } = await cipherOver();
      const other = (await cipherOver(dir)).cipher;
      await other.sealText("c1", ref("t0:user"), "warm");
      await cipher.rotate(ACME);
      const after = await cipher.sealText("c1", ref("t2:user"), "after");
      expect(await other.openText("c1", ref("t2:user"), after)).toBe("after");
    });
  });

  describe("reseal", () => {
    it("returns the value sealed under the tenant's current key when an earlier key sealed it, readable at the same place", async () => {
      const { cipher } = await cipherOver();
      const before = await cipher.sealText("c1", ref("t1:user"), MARKER);
      const { keyId } = await cipher.rotate(ACME);
      const resealed = await cipher.reseal("c1", ref("t1:user"), before);
      expect(resealed).toBeInstanceOf(Binary);
      expect(Buffer.from((resealed as Binary).buffer).includes(Buffer.from(keyId))).toBe(true);
      expect(await cipher.openText("c1", ref("t1:user"), resealed)).toBe(MARKER);
      // Still bound to its document: moved elsewhere it is refused.
      expect((await refusal(cipher.openText("c1", ref("t2:user"), resealed))).reason).toBe("moved");
    });

    it("returns undefined for a value the current key sealed, a clear value, and with encryption off", async () => {
      const { cipher } = await cipherOver();
      await cipher.rotate(ACME);
      const current = await cipher.sealText("c1", ref("t1:user"), "now");
      expect(await cipher.reseal("c1", ref("t1:user"), current)).toBeUndefined();
      expect(await cipher.reseal("c1", ref("t1:user"), "clear")).toBeUndefined();
      expect(await CLEAR_FIELDS.reseal("c1", ref("t1:user"), current)).toBeUndefined();
    });

    it("throws `moved` for a ciphertext copied to another document rather than sealing it into place", async () => {
      const { cipher } = await cipherOver();
      const before = await cipher.sealText("c1", ref("t1:user"), MARKER);
      await cipher.rotate(ACME);
      expect((await refusal(cipher.reseal("c1", ref("t9:user"), before))).reason).toBe("moved");
    });

    it("re-seals under a key another process rotated in, once it reads the current key again", async () => {
      const { cipher, dir } = await cipherOver();
      const before = await cipher.sealText("c1", ref("t1:user"), MARKER);
      const { keyId } = await (await cipherOver(dir)).cipher.rotate(ACME);
      expect(await cipher.currentKey(ACME)).toBe(keyId);
      const resealed = await cipher.reseal("c1", ref("t1:user"), before);
      expect(Buffer.from((resealed as Binary).buffer).includes(Buffer.from(keyId))).toBe(true);
    });
  });

  describe("shred", () => {
    it("leaves the tenant's values undecryptable by any process, and another tenant's readable", async () => {
      const { cipher, dir } = await cipherOver();
      const acme = await cipher.sealText("c1", ref("t1:user"), MARKER);
      const globex = await cipher.sealText("g1", ref("t1:user"), "globex's");
      const receipt = await cipher.shred(ACME, new Date("2026-12-07T18:00:00Z"));
      expect(receipt).toMatchObject({ issuer: "api", tenant: "acme", keySource: "local", keys: [expect.any(String)] });
      expect(receipt.finalAt.toISOString()).toBe("2026-12-07T18:05:00.000Z");
      const fresh = (await cipherOver(dir)).cipher;
      expect((await refusal(fresh.openText("c1", ref("t1:user"), acme))).reason).toBe("undecryptable");
      expect((await refusal(cipher.openText("c1", ref("t1:user"), acme))).reason).toBe("undecryptable");
      expect(await fresh.openText("g1", ref("t1:user"), globex)).toBe("globex's");
    });
  });
});
