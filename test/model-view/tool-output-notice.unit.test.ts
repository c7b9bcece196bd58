import { describe, expect, it } from "vitest";
import { DEFAULT_NOTICE_PREVIEW_CHARS, toolOutputNotice } from "../../lib/model-view/index.js";

describe("tool output notice", () => {
  describe("toolOutputNotice", () => {
    it("returns the tool name, size, handle and how to read part of it", () => {
      const text = toolOutputNotice({ toolName: "sql_query", tokens: 31_000, handle: "art_1", preview: "a,b", reason: "over-threshold", threshold: 2_000 });
      expect(text).toContain('"sql_query"');
      expect(text).toContain("31000 tokens");
      expect(text).toContain("2000-token limit");
      expect(text).toContain('read_tool_output with {"handle": "art_1"}');
      expect(text).toContain("a,b");
    });

    it("returns advice to narrow the call when there is no handle", () => {
      const text = toolOutputNotice({ toolName: "sql_query", tokens: 3_000, preview: "", reason: "over-budget", threshold: 2_000 });
      expect(text).not.toContain("read_tool_output");
      expect(text).toContain("narrower request");
      expect(text).toContain("context budget");
    });

    it("returns at most the first DEFAULT_NOTICE_PREVIEW_CHARS characters of the preview", () => {
      const preview = "x".repeat(DEFAULT_NOTICE_PREVIEW_CHARS * 3);
      const text = toolOutputNotice({ toolName: "t", tokens: 9_999, preview, reason: "over-threshold", threshold: 10 });
      expect(text).toContain(`${"x".repeat(DEFAULT_NOTICE_PREVIEW_CHARS)}…`);
      expect(text).not.toContain("x".repeat(DEFAULT_NOTICE_PREVIEW_CHARS + 1));
    });

    it("does not cut a surrogate pair in half", () => {
      const preview = `${"x".repeat(DEFAULT_NOTICE_PREVIEW_CHARS - 1)}😀tail`;
      const text = toolOutputNotice({ toolName: "t", tokens: 9_999, preview, reason: "over-threshold", threshold: 10 });
      expect(text).toContain(`${"x".repeat(DEFAULT_NOTICE_PREVIEW_CHARS - 1)}…`);
    });
  });
});
