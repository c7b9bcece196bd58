import { describe, expect, it } from "vitest";
import { createBpeCounter } from "../../lib/model-view/bpe-counter.js";

const b64 = (text: string) => Buffer.from(text, "latin1").toString("base64");

/**
 * A toy encoding: every byte is a token (ranks 0–255), then `merges` in rank order from 256,
 * written as tiktoken's files give them: runs of consecutive ranks, "<unused> <first rank> <tokens>".
 */
function toyCounter(merges: string[], patStr = "\\S+|\\s+") {
  const bytes = Array.from({ length: 256 }, (_, i) => String.fromCharCode(i));
  const bpe_ranks = [`! 0 ${bytes.map(b64).join(" ")}`, `! 256 ${merges.map(b64).join(" ")}`].join("\n");
  return createBpeCounter({ pat_str: patStr, special_tokens: {}, bpe_ranks });
}

describe("createBpeCounter", () => {
  it("returns one token for a text that merges whole, a token per byte where nothing merges, and 0 for no text", () => {
    const count = toyCounter(["ab", "abc"]);
    expect(count("abc")).toBe(1);
    expect(count("xyz")).toBe(3);
    expect(count("")).toBe(0);
  });

  it("merges the lowest-ranked pair first: 'abcd' takes bc (256), then nothing merges, though ab and cd would give 2", () => {
    expect(toyCounter(["bc", "ab", "cd"])("abcd")).toBe(3);
    expect(toyCounter(["ab", "cd", "bc"])("abcd")).toBe(2);
  });

  it("merges the leftmost of equal pairs first: 'aaab' gives aa, a, b, though a, aa, b would merge into aab", () => {
    expect(toyCounter(["aa", "aab"])("aaab")).toBe(3);
  });

  it("counts each piece of the pre-tokenizer apart: no merge crosses a piece's edge", () => {
    expect(toyCounter(["ab", "abc"])("ab c")).toBe(3);
    expect(toyCounter(["ab", "abc"], "\\S")("abc")).toBe(3);
  });

  it("counts a character outside ASCII by its UTF-8 bytes, merged as any bytes are", () => {
    expect(toyCounter([])("é")).toBe(2);
    expect(toyCounter([Buffer.from("é").toString("latin1")])("é")).toBe(1);
  });

  it("returns a count for a long single piece, one token per merged pair", () => {
    expect(toyCounter(["ab"])("ab".repeat(10_000))).toBe(10_000);
  });
});
