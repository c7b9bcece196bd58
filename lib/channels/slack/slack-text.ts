/**
 * Slack's control characters in message text, both ways. Slack writes `&`, `<` and `>` as
 * `&amp;`, `&lt;` and `&gt;`, and reads an unescaped `<…>` as markup: `<!channel>` notifies a whole
 * channel, `<@U…>` mentions someone, `<url|label>` disguises a link. Text we did not write (the
 * model's answer, a tool's arguments) is escaped before it is posted, so it is shown as written.
 */

const ESCAPES: Readonly<Record<string, string>> = { "&": "&amp;", "<": "&lt;", ">": "&gt;" };
const UNESCAPES: Readonly<Record<string, string>> = { "&amp;": "&", "&lt;": "<", "&gt;": ">" };

/** Escapes `&`, `<` and `>` as Slack asks, so that no markup of Slack's is read in the text. */
export function escapeSlackText(text: string): string {
  return text.replace(/[&<>]/g, (c) => ESCAPES[c]);
}

/** Undoes Slack's escaping of `&`, `<` and `>`, in one pass (so `&amp;lt;` is `&lt;`), as the person typed them. */
export function unescapeSlackText(text: string): string {
  return text.replace(/&(?:amp|lt|gt);/g, (entity) => UNESCAPES[entity]);
}
