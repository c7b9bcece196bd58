import { Binary } from "mongodb";
import { describe, expect, it } from "vitest";
import { CIPHERTEXT_SUBTYPE, ciphertextOf, contentRefused, isCiphertext } from "../../lib/crypto/content-cipher.js";

describe("content-cipher", () => {
  describe("isCiphertext", () => {
    it("returns true for binary of the ciphertext subtype only", () => {
      expect(isCiphertext(ciphertextOf(Buffer.from("x")))).toBe(true);
      expect(ciphertextOf(Buffer.from("x")).sub_type).toBe(CIPHERTEXT_SUBTYPE);
    });

    it("returns false for clear bytes (subtype 0) and for text", () => {
      expect(isCiphertext(new Binary(Buffer.from("x")))).toBe(false);
      expect(isCiphertext("MARKER")).toBe(false);
    });
  });

  describe("contentRefused", () => {
    it("returns an error naming the collection, field and document, not the content", () => {
      const error = contentRefused("moved", { collection: "turns", id: "t9", field: "answer" });
      expect(error.message).toBe("turns.answer of t9 refused: the ciphertext was written for another document, field, collection or tenant");
      expect(error.reason).toBe("moved");
    });
  });
});
