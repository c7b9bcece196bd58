import { Binary } from "mongodb";
import { describe, expect, it } from "vitest";
import { CLEAR_FIELDS } from "../../lib/crypto/clear-field-cipher.js";
import { ciphertextOf, type FieldRef } from "../../lib/crypto/content-cipher.js";
import { ContentRefusedError } from "../../lib/errors.js";

const ref: FieldRef = { collection: "messages", id: "t1:user", field: "content" };

describe("ClearFieldCipher", () => {
  describe("sealText", () => {
    it("returns the text as it is", async () => {
      expect(await CLEAR_FIELDS.sealText("c1", ref, "hello")).toBe("hello");
    });
  });

  describe("openText", () => {
    it("throws when the stored value is a ciphertext (encryption is off here), naming where", async () => {
      const error = await CLEAR_FIELDS.openText("c1", ref, ciphertextOf(Buffer.from("sealed"))).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ContentRefusedError);
      expect(error).toMatchObject({ reason: "encryption_off", collection: "messages", field: "content" });
    });
  });

  describe("openBytes", () => {
    it("returns clear bytes stored as BSON binary of subtype 0", async () => {
      expect(Buffer.from(await CLEAR_FIELDS.openBytes("c1", ref, new Binary(Buffer.from("abc"))))).toEqual(Buffer.from("abc"));
    });
  });

  describe("reseal", () => {
    it("returns undefined: without keys there is nothing to re-seal", async () => {
      const sealed = new Binary(Buffer.from("abc"), 0x80);
      expect(await CLEAR_FIELDS.reseal("c1", ref, sealed)).toBeUndefined();
      expect(await CLEAR_FIELDS.resealFor({ issuer: "api", tenant: "acme" }, ref, sealed)).toBeUndefined();
      expect(await CLEAR_FIELDS.currentKey({ issuer: "api", tenant: "acme" })).toBeUndefined();
    });
  });

  describe("openJsonFor", () => {
    it("returns the stored value as it is", async () => {
      expect(await CLEAR_FIELDS.openJsonFor({ issuer: "api", tenant: "acme" }, ref, { a: 1 })).toEqual({ a: 1 });
    });
  });
});
