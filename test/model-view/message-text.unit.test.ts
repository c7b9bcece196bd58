import { describe, expect, it } from "vitest";
import { AIMessage } from "@langchain/core/messages";
import { messageText } from "../../lib/model-view/message-text.js";

describe("message-text", () => {
  describe("messageText", () => {
    it("returns string content as it is, blank or not", () => {
      expect(messageText("  an answer ")).toBe("  an answer ");
      expect(messageText(" ")).toBe(" ");
    });

    it("returns the text blocks joined with a newline, so separate blocks never run together", () => {
      expect(
        messageText([
          { type: "text", text: "I will look it up." },
          { type: "text", text: "Here it is." },
        ]),
      ).toBe("I will look it up.\nHere it is.");
    });

    it("returns no line for a blank text block or a block that is not text", () => {
      const content = [
        { type: "text", text: "first" },
        { type: "text", text: "  " },
        { type: "tool_use", id: "t1", name: "lookup", input: {} },
        { type: "text", text: "second" },
      ];
      expect(messageText(new AIMessage({ content }).content)).toBe("first\nsecond");
    });

    it("returns an empty string for a list without text", () => {
      expect(messageText([])).toBe("");
    });
  });
});
