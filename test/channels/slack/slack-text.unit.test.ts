import fc from "fast-check";
import { escapeSlackText, unescapeSlackText } from "../../../lib/channels/slack/slack-text.js";

describe("slack/slack-text", () => {
  it("escapes the three characters Slack reads as markup, and nothing else", () => {
    expect(escapeSlackText("<!channel> R&D <@U1> <https://x.example|docs> a > b")).toBe(
      "&lt;!channel&gt; R&amp;D &lt;@U1&gt; &lt;https://x.example|docs&gt; a &gt; b",
    );
    expect(escapeSlackText("*bold* _it_ `code` :tada: é 😀")).toBe("*bold* _it_ `code` :tada: é 😀");
  });

  it("escapes an entity the text already holds, so it is shown as typed", () => {
    expect(escapeSlackText("&lt;!here&gt;")).toBe("&amp;lt;!here&amp;gt;");
  });

  it("undoes Slack's escaping in one pass", () => {
    expect(unescapeSlackText("R&amp;D &lt;b&gt; &amp;lt;")).toBe("R&D <b> &lt;");
  });

  it("unescapes what it escaped, for any text, leaving no bare < or > in the escaped form", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), (text) => {
        const escaped = escapeSlackText(text);
        expect(escaped).not.toMatch(/[<>]/);
        expect(unescapeSlackText(escaped)).toBe(text);
      }),
    );
  });
});
