import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { conversationTitle, TITLE_CHARS } from "../../lib/agent/conversation-title.js";
import { SAMPLE_QUESTIONS } from "../../lib/tools/sample-questions.js";

describe("conversationTitle", () => {
  it("returns a sample question's words without its tool call and SQL", () => {
    const [margin] = SAMPLE_QUESTIONS.sql_query;
    expect(conversationTitle(margin)).toBe("Why did margin fall last month?");
    expect(conversationTitle('Try a write: sql_query {"sql": "DELETE FROM orders"}')).toBe("Try a write");
  });

  it("returns a bare tool call as its tool's name, never its arguments", () => {
    expect(conversationTitle('sql_query {"sql": "select count(*) from orders"}')).toBe("sql_query call");
    for (const sample of Object.values(SAMPLE_QUESTIONS).flat()) expect(conversationTitle(sample)).not.toMatch(/SELECT|\{|"sql"/i);
  });

  it("returns a plain question as it is, and a long one cut at a word with an ellipsis", () => {
    expect(conversationTitle("  My name is   Ada. ")).toBe("My name is Ada.");
    const long = conversationTitle(`${"word ".repeat(40)}end`);
    expect(long.endsWith("…")).toBe(true);
    expect(long.length).toBeLessThanOrEqual(TITLE_CHARS);
    expect(long).not.toMatch(/ …$/);
  });

  it("returns at most TITLE_CHARS characters for any text", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 400 }), (text) => {
        expect([...conversationTitle(text)].length).toBeLessThanOrEqual(TITLE_CHARS);
      }),
    );
  });
});
