import cl100k from "js-tiktoken/ranks/cl100k_base";
import type { BaseMessage } from "@langchain/core/messages";
import { createBpeCounter, type BpeCounter } from "./bpe-counter.js";

// Claude's tokenizer is not published; cl100k_base is a real BPE within a few percent on English and code.
// Built on first use: the table takes ~0.1 s (bench/results/cold-start.md).
let counter: BpeCounter | undefined;

/** Per-message framing overhead (role markers), as chat formats add. */
export const MESSAGE_OVERHEAD_TOKENS = 4;

/**
 * Characters of message text whose token counts are remembered across calls. State is rehydrated
 * from checkpoints on every invocation, so message objects are new each turn while their texts
 * repeat; remembering texts makes the first view of a turn cheap too.
 */
export const DEFAULT_TEXT_CACHE_CHARS = 4_000_000;

/**
 * Message texts longer than this are counted every time rather than pinned in the cache: in state
 * they are rare, since tool outputs over the per-output threshold are offloaded.
 */
export const DEFAULT_MAX_CACHED_TEXT_CHARS = 32_000;

/** Messages whose token counts are remembered by message id, for the statistics of the whole state. */
export const DEFAULT_ID_CACHE_ENTRIES = 200_000;

/**
 * A bounded memo with two generations: hits in the older one are promoted, and when the newer one
 * is full the older one is dropped. Amortised O(1), no per-hit reordering.
 */
class GenerationalMemo<V> {
  private current = new Map<string, V>();
  private previous = new Map<string, V>();
  private currentWeight = 0;

  constructor(
    private readonly capacity: number,
    private readonly weigh: (key: string) => number,
  ) {}

  get(key: string): V | undefined {
    const hit = this.current.get(key);
    if (hit !== undefined) return hit;
    const old = this.previous.get(key);
    if (old !== undefined) this.set(key, old);
    return old;
  }

  set(key: string, value: V): void {
    if (this.currentWeight >= this.capacity / 2) {
      this.previous = this.current;
      this.current = new Map();
      this.currentWeight = 0;
    }
    this.current.set(key, value);
    this.currentWeight += this.weigh(key);
  }
}

const textTokens = new GenerationalMemo<number>(DEFAULT_TEXT_CACHE_CHARS, (text) => text.length);

/**
 * Tokens of `text` under cl100k_base, the count a stock js-tiktoken encoder gives, in time linear in
 * the text (bpe-counter.ts; `npm run bench:tokenizer` measures the worst case found). Not memoised:
 * most texts counted alone (tool outputs) never recur.
 */
export function countTextTokens(text: string): number {
  if (text.length === 0) return 0;
  counter ??= createBpeCounter(cl100k);
  return counter(text);
}

/** `countTextTokens`, memoised by content: message texts recur in every view of the thread, and tokenizing runs at a few MB/s. */
export function countRecurringTextTokens(text: string): number {
  if (text.length === 0 || text.length > DEFAULT_MAX_CACHED_TEXT_CHARS) return countTextTokens(text);
  const known = textTokens.get(text);
  if (known !== undefined) return known;
  const tokens = countTextTokens(text);
  textTokens.set(text, tokens);
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

function toolCallsOf(message: BaseMessage): ToolCallLike[] | undefined {
  return (message as { tool_calls?: ToolCallLike[] }).tool_calls;
}

/** Tokens of one message: framing, content and tool calls (name and JSON arguments). Exact. */
export function countMessageTokens(message: BaseMessage): number {
  const toolCalls = toolCallsOf(message);
  const counted = messageTokens.get(message);
  if (counted && counted.content === message.content && counted.toolCalls === toolCalls) return counted.tokens;
  let tokens = MESSAGE_OVERHEAD_TOKENS + countRecurringTextTokens(contentText(message));
  for (const call of toolCalls ?? []) tokens += countRecurringTextTokens(call.name) + countRecurringTextTokens(JSON.stringify(call.args) ?? "");
  messageTokens.set(message, { content: message.content, toolCalls, tokens });
  return tokens;
}

export function countMessagesTokens(messages: readonly BaseMessage[]): number {
  let total = 0;
  for (const m of messages) total += countMessageTokens(m);
  return total;
}

/**
 * Where a message's token count is kept from the moment it enters the state. It is checkpointed
 * with the message, so a thread rehydrated in a new container is not tokenized again for its
 * statistics (about 550 ms at turn 200 otherwise).
 */
export const TOKEN_COUNT_KEY = "tokenCount";

/** Records the message's token count on it; call only on a message about to enter the state. */
export function stampTokenCount<M extends BaseMessage>(message: M): M {
  message.response_metadata = { ...message.response_metadata, [TOKEN_COUNT_KEY]: countMessageTokens(message) };
  return message;
}

interface IdentifiedCount {
  type: string;
  chars: number;
  toolCalls: number;
  tokens: number;
}

const idTokens = new GenerationalMemo<IdentifiedCount>(DEFAULT_ID_CACHE_ENTRIES, () => 1);

/**
 * Tokens of the whole state, for statistics. LangGraph's messages reducer gives every message an
 * id that survives checkpoints, so a rehydrated message is recognised by id (with its type, text
 * length and number of tool calls as a guard against a message replaced under the same id) without
 * hashing its text. Messages without an id are counted as `countMessageTokens` does. The view's own
 * tokens, which the budget rests on, are always counted exactly.
 */
export function countStateTokens(messages: readonly BaseMessage[]): number {
  let total = 0;
  for (const message of messages) {
    const stamped = (message.response_metadata as Record<string, unknown> | undefined)?.[TOKEN_COUNT_KEY];
    if (typeof stamped === "number") {
      total += stamped;
      continue;
    }
    if (!message.id) {
      total += countMessageTokens(message);
      continue;
    }
    const chars = typeof message.content === "string" ? message.content.length : contentText(message).length;
    const toolCalls = toolCallsOf(message)?.length ?? 0;
    const known = idTokens.get(message.id);
    if (known && known.type === message.type && known.chars === chars && known.toolCalls === toolCalls) {
      total += known.tokens;
      continue;
    }
    const tokens = countMessageTokens(message);
    idTokens.set(message.id, { type: message.type, chars, toolCalls, tokens });
    total += tokens;
  }
  return total;
}
