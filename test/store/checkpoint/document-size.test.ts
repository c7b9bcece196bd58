import { BSON } from "mongodb";
import { describe, expect, it } from "vitest";
import { DocumentTooLargeError } from "../../../lib/errors.js";
import { assertDocumentFits, DEFAULT_MAX_DOCUMENT_BYTES, MONGODB_MAX_DOCUMENT_BYTES } from "../../../lib/store/checkpoint/document-size.js";

describe("document size", () => {
  describe("assertDocumentFits", () => {
    const document = { thread_id: "t", value: "x".repeat(1000) };
    const size = BSON.calculateObjectSize(document);

    it("returns the document's BSON size when it is at the limit", () => {
      expect(assertDocumentFits(document, size, "checkpoint")).toBe(size);
    });

    it("throws DocumentTooLargeError with the size and limit when it is one byte above", () => {
      const thrown = (() => {
        try {
          assertDocumentFits(document, size - 1, "checkpoint");
        } catch (error) {
          return error;
        }
      })();
      expect(thrown).toBeInstanceOf(DocumentTooLargeError);
      expect(thrown).toMatchObject({ bytes: size, limit: size - 1 });
      expect((thrown as Error).message).toMatch(/^checkpoint would be \d+ bytes/);
    });
  });

  it("keeps the default limit below MongoDB's", () => {
    expect(DEFAULT_MAX_DOCUMENT_BYTES).toBeLessThan(MONGODB_MAX_DOCUMENT_BYTES);
  });
});
