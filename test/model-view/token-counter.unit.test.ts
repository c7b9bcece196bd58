import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { encodingForModel } from "js-tiktoken";
import { countMessagesTokens, countMessageTokens, countStateTokens, countTextTokens, MESSAGE_OVERHEAD_TOKENS } from "../../lib/model-view/index.js";
import { COMBINING, EMOJI, runShapes, WHITESPACE } from "../support/adversarial-text.js";
import { expectLinearWork, LINEAR_WORK_TIMEOUT_MS } from "../support/linear-work.js";
import { stampTokenCount, TOKEN_COUNT_KEY } from "../../lib/model-view/token-counter.js";

// Built once: a stock encoder builds both of its tables (about a second here).
const stock = encodingForModel("gpt-4");

describe("token counter", () => {
  describe("countTextTokens", () => {
    it("returns 0 for empty text", () => {
      expect(countTextTokens("")).toBe(0);
    });

    it("returns cl100k_base token counts", () => {
      expect(countTextTokens("hello world")).toBe(2);
      expect(countTextTokens(`row${" row".repeat(99)}`)).toBe(100);
    });

    it("returns the counts of a stock js-tiktoken encoder (its own constructor) for text in any script", () => {
      const corpus = [
        "Ünïcödé straße — naïve café",
        "東京は晴れ。¿Qué tal? Привет, мир! مرحبا",
        "emoji 👩‍👩‍👧 🚀🚀",
        "const f = (x) => x ** 2; // ok\n\tif (a !== b) {}",
        "   spaces\n\n\n  and 12345678901234567890 digits",
        "<|endoftext|> as plain text",
      ];
      for (const text of corpus) expect(countTextTokens(text)).toBe(stock.encode(text, [], []).length);
      fc.assert(fc.property(fc.string({ unit: "grapheme", maxLength: 200 }), (text) => countTextTokens(text) === stock.encode(text, [], []).length));
      fc.assert(fc.property(fc.string({ unit: "binary", maxLength: 200 }), (text) => countTextTokens(text) === stock.encode(text, [], []).length));
    });

    it("returns the stock encoder's counts for runs of blanks, letters, symbols and newlines, each one piece to the pre-tokenizer", () => {
      const unit = fc.constantFrom(" ", "\t", "\n", "\r", "\u3000", "\u00a0", "\u2003", "a", "é", "漢", "!", "1", "'s", "\u0301", "👩‍👧");
      const runs = fc
        .array(fc.tuple(unit, fc.integer({ min: 1, max: 64 })), { minLength: 1, maxLength: 4 })
        .map((parts) => parts.map(([u, n]) => u.repeat(n)).join(""));
      fc.assert(
        fc.property(runs, (text) => countTextTokens(text) === stock.encode(text, [], []).length),
        { numRuns: 100 },
      );
    });

    it("returns the plain BPE count for text with long words and symbol runs", () => {
      const text = "Pneumonoultramicroscopicsilicovolcanoconiosis is long; so is ==================================== this.";
      expect(countTextTokens(text)).toBe(stock.encode(text).length);
    });

    it("returns a count for 16,000 ideographic spaces, which a stock encoder takes minutes over", () => {
      // 8,000 took js-tiktoken 66 s; test/model-view/linear-time.test.ts bounds the work per character.
      // Two ideographic spaces are one cl100k token, as the stock encoder counts shorter runs.
      expect(countTextTokens("\u3000".repeat(16_000))).toBe(8_000);
      expect(stock.encode("\u3000".repeat(100)).length).toBe(50);
    });

    it(
      "counts in time linear in the text, whatever the text holds",
      () => {
        // Each whitespace class, combining mark and emoji sequence every time; other shapes at random.
        expectLinearWork(countTextTokens, { shapes: runShapes([...WHITESPACE, ...COMBINING, ...EMOJI]), numRuns: 8 });
      },
      LINEAR_WORK_TIMEOUT_MS,
    );

    it("returns the same count when asked again", () => {
      const text = "SELECT region, SUM(revenue) FROM sales GROUP BY region";
      expect(countTextTokens(text)).toBe(countTextTokens(text.slice(0)));
    });
  });

  describe("countMessageTokens", () => {
    it("returns the framing overhead plus the content's tokens", () => {
      expect(countMessageTokens(new HumanMessage("hello world"))).toBe(MESSAGE_OVERHEAD_TOKENS + 2);
    });

    it("counts tool call names and arguments", () => {
      const message = new AIMessage({ content: "", tool_calls: [{ id: "c1", name: "sql_query", args: { q: 1 } }] });
      expect(countMessageTokens(message)).toBe(MESSAGE_OVERHEAD_TOKENS + countTextTokens("sql_query") + countTextTokens('{"q":1}'));
    });

    it("counts a message again when its content was reassigned", () => {
      const message = new HumanMessage("hello world");
      countMessageTokens(message);
      message.content = "hello";
      expect(countMessageTokens(message)).toBe(MESSAGE_OVERHEAD_TOKENS + 1);
    });
  });

  describe("countMessagesTokens", () => {
    it("returns the sum over the messages", () => {
      const messages = [new HumanMessage("hello world"), new AIMessage("hello")];
      expect(countMessagesTokens(messages)).toBe(2 * MESSAGE_OVERHEAD_TOKENS + 3);
    });
  });

  describe("stampTokenCount", () => {
    it("records the message's exact count in its response metadata", () => {
      const message = stampTokenCount(new HumanMessage({ content: "hello world", id: "stamp-1" }));
      expect(message.response_metadata[TOKEN_COUNT_KEY]).toBe(countMessageTokens(new HumanMessage("hello world")));
    });
  });

  describe("countStateTokens", () => {
    it("returns the stamped count without tokenizing a stamped message again", () => {
      const stamped = new HumanMessage({ content: "hello world", id: "stamp-2", response_metadata: { [TOKEN_COUNT_KEY]: 1234 } });
      expect(countStateTokens([stamped])).toBe(1234);
    });

    it("returns the same total as countMessagesTokens, with and without ids", () => {
      const messages = [new HumanMessage({ content: "hello world", id: "m1" }), new AIMessage("hello"), new HumanMessage({ content: "row row", id: "m2" })];
      expect(countStateTokens(messages)).toBe(countMessagesTokens(messages));
    });

    it("counts a message again when its id comes back with a different text", () => {
      countStateTokens([new HumanMessage({ content: "hello world", id: "m3" })]);
      const replaced = new HumanMessage({ content: "hello world, and more words", id: "m3" });
      expect(countStateTokens([replaced])).toBe(countMessageTokens(replaced));
    });
  });
});
