import { Tiktoken } from "js-tiktoken/lite";
import cl100k from "js-tiktoken/ranks/cl100k_base";
import type { BaseMessage } from "@langchain/core/messages";

// Claude's tokenizer is not published; cl100k_base is a real BPE within a few percent on English and code.
let encoder: Tiktoken | undefined;
function getEncoder(): Tiktoken {
  encoder ??= new Tiktoken(cl100k);
  return encoder;
}

/** Per-message framing overhead (role markers), as chat formats add. */
export const MESSAGE_OVERHEAD_TOKENS = 4;

export function countTextTokens(text: string): number {
  if (text.length === 0) return 0;
  return getEncoder().encode(text, [], []).length;
}

function contentText(message: BaseMessage): string {
  const { content } = message;
  if (typeof content === "string") return content;
  return content.map((block) => ("text" in block && typeof block.text === "string" ? block.text : JSON.stringify(block))).join("\n");
}

export function countMessageTokens(message: BaseMessage): number {
  let tokens = MESSAGE_OVERHEAD_TOKENS + countTextTokens(contentText(message));
  const toolCalls = (message as { tool_calls?: { name: string; args: unknown }[] }).tool_calls;
  for (const call of toolCalls ?? []) tokens += countTextTokens(call.name) + countTextTokens(JSON.stringify(call.args));
  return tokens;
}

export function countMessagesTokens(messages: readonly BaseMessage[]): number {
  let total = 0;
  for (const m of messages) total += countMessageTokens(m);
  return total;
}
