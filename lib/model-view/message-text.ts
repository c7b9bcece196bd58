import type { BaseMessage } from "@langchain/core/messages";

/**
 * The text of a message's content, the one rule for every reader (the view, the stored answer,
 * the recorded view, the local model): a string as it is; of a block list, the text blocks that
 * are not blank, each on its own line. Separate blocks (text before and after a tool call, say)
 * stay separate words instead of running together.
 */
export function messageText(content: BaseMessage["content"]): string {
  if (typeof content === "string") return content;
  return content
    .map((block) => (typeof block === "string" ? block : block.type === "text" && typeof block.text === "string" ? block.text : ""))
    .filter((text) => text.trim().length > 0)
    .join("\n");
}
