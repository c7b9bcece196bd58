/** Longest title a conversation gets from its first question. */
export const TITLE_CHARS = 80;

/** A tool call as a message names it for the offline model: a snake_case name, then its JSON arguments. */
const TOOL_CALL = /\b([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\s*\{/;

/**
 * A conversation's title from its first question: the question's words, without a tool call and
 * its JSON arguments (`Why did margin fall? sql_query {"sql": "SELECT …"}` is "Why did margin
 * fall?"); a bare tool call is named by its tool ("sql_query call"). Cut at a word within
 * {@link TITLE_CHARS}, with an ellipsis when cut.
 */
export function conversationTitle(question: string): string {
  const call = TOOL_CALL.exec(question);
  const words = (call ? question.slice(0, call.index) : question)
    .replace(/\s+/g, " ")
    .trim()
    .replace(/[:\s]+$/, "");
  const text = words || (call ? `${call[1]} call` : "");
  if ([...text].length <= TITLE_CHARS) return text;
  const cut = [...text].slice(0, TITLE_CHARS - 1).join("");
  const space = cut.lastIndexOf(" ");
  return `${(space > TITLE_CHARS / 2 ? cut.slice(0, space) : cut).trimEnd()}…`;
}
