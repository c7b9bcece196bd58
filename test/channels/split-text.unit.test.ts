import fc from "fast-check";
import { splitText } from "../../lib/channels/index.js";

describe("split-text", () => {
  describe("splitText", () => {
    it("returns a short text as one piece", () => {
      expect(splitText("short answer", 100)).toEqual(["short answer"]);
    });

    it("returns pieces cut at paragraph boundaries when there are some", () => {
      const a = "a".repeat(60);
      const b = "b".repeat(60);
      expect(splitText(`${a}\n\n${b}`, 100)).toEqual([a, b]);
    });

    it("returns a word longer than the limit cut into pieces of the limit", () => {
      expect(splitText("x".repeat(25), 10)).toEqual(["x".repeat(10), "x".repeat(10), "x".repeat(5)]);
    });

    it("returns pieces no longer than the limit whose words, in order, are the text's", () => {
      const word = fc.oneof(
        fc.string({ minLength: 1, maxLength: 12 }).filter((s) => !/\s/.test(s)),
        fc.constantFrom("\n", "\n\n"),
      );
      fc.assert(
        fc.property(fc.array(word, { maxLength: 200 }), fc.integer({ min: 12, max: 300 }), (words, max) => {
          const text = words.join(" ");
          const pieces = splitText(text, max);
          expect(pieces.every((p) => p.length <= max)).toBe(true);
          expect(pieces.join(" ").split(/\s+/).filter(Boolean)).toEqual(text.split(/\s+/).filter(Boolean));
        }),
        { numRuns: 1_000 },
      );
    });
  });
});
