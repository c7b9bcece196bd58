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

/**
 * Characters of text whose token counts are remembered across calls. State is rehydrated from
 * checkpoints on every invocation, so message objects are new each turn while their texts repeat;
 * remembering texts makes the first view of a turn as cheap as the later ones.
 */
export const DEFAULT_TEXT_CACHE_CHARS = 4_000_000;

/**
 * Texts longer than this are counted every time rather than pinned in the cache: they are tool
 * outputs far over any per-output threshold, which are offloaded and do not come back in state.
 */
export const DEFAULT_MAX_CACHED_TEXT_CHARS = 32_000;

// Insertion-ordered, so the first key is the least recently used one.
const textTokens = new Map<string, number>();
let cachedChars = 0;

function rememberText(text: string, tokens: number): void {
  textTokens.set(text, tokens);
  cachedChars += text.length;
  while (cachedChars > DEFAULT_TEXT_CACHE_CHARS) {
    const oldest = textTokens.keys().next().value as string;
    textTokens.delete(oldest);
    cachedChars -= oldest.length;
  }
}

/** Tokens of `text` under cl100k_base. Memoised by content: tokenizing is ~3 MB/s, a lookup is not. */
export function countTextTokens(text: string): number {
  if (text.length === 0) return 0;
  const known = textTokens.get(text);
  if (known !== undefined) {
    // Refresh recency: re-inserting moves the key to the end of the map.
    textTokens.delete(text);
    textTokens.set(text, known);
    return known;
  }
  const tokens = getEncoder().encode(text, [], []).length;
  if (text.length <= DEFAULT_MAX_CACHED_TEXT_CHARS) rememberText(text, tokens);
  return tokens;
}

function contentText(message: BaseMessage): string {
  const { content } = message;
  if (typeof content === "string") return content;
  return content.map((block) => ("text" in block && typeof block.text === "string" ? block.text : JSON.stringify(block))).join("\n");
}

interface ToolCallLike {
  name: string;
  args: unknown;
}

interface CountedMessage {
  content: BaseMessage["content"];
  toolCalls: ToolCallLike[] | undefined;
  tokens: number;
}

// Keyed by the message object; the content and tool-call references are checked on every hit, so a
// message whose fields were reassigned is counted again rather than reported stale.
const messageTokens = new WeakMap<BaseMessage, CountedMessage>();

/** Tokens of one message: framing, content and tool calls (name and JSON arguments). */
export function countMessageTokens(message: BaseMessage): number {
  const toolCalls = (message as { tool_calls?: ToolCallLike[] }).tool_calls;
  const counted = messageTokens.get(message);
  if (counted && counted.content === message.content && counted.toolCalls === toolCalls) return counted.tokens;
  let tokens = MESSAGE_OVERHEAD_TOKENS + countTextTokens(contentText(message));
  for (const call of toolCalls ?? []) tokens += countTextTokens(call.name) + countTextTokens(JSON.stringify(call.args) ?? "");
  messageTokens.set(message, { content: message.content, toolCalls, tokens });
  return tokens;
}

export function countMessagesTokens(messages: readonly BaseMessage[]): number {
  let total = 0;
  for (const m of messages) total += countMessageTokens(m);
  return total;
}
