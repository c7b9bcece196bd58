import { AIMessage, HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { InvalidModelViewError } from "../errors.js";
import type { CachePoint, CacheTtl, PromptCachePolicy } from "./types.js";
import { CONVERSE_RULES } from "./converse-rules.js";

/** Cache points Bedrock accepts in one request (tools, system and messages together); more is a 400. */
export const MAX_CACHE_POINTS = 4;

/** The content block `ChatBedrockConverse` turns into a Converse `cachePoint` (in system, user, assistant and tool messages). */
export interface CachePointBlock {
  type: "cache_point";
  cachePoint: { type: "default"; ttl?: CacheTtl };
}

export function isCachePointBlock(block: unknown): block is CachePointBlock {
  return typeof block === "object" && block !== null && "cachePoint" in block;
}

/** Where the view's parts end: message indexes and the local tokens of the prefix up to each message's end. */
export interface CacheLayout {
  /** Local tokens of the prefix up to the end of each view message, tool schemas included. */
  prefixTokens: number[];
  /** Index of the system message, if any. */
  system?: number;
  /** Index of the last message of the finished-turn block, once the block is whole. */
  historyBlockEnd?: number;
  /**
   * Indexes where earlier calls of the thread ended, oldest first: the questions of the finished turns
   * after the block (each the end of its turn's first call), then the ends of this turn's earlier steps.
   */
  earlierEnds: number[];
}

/**
 * The cache points of a view, in view order. Bedrock caches a point only where the model's tokens since
 * the previous point reach `minTokensPerCheckpoint`, and reads, at each point, the longest prefix an
 * earlier request wrote at it or at one of the ~20 content-block boundaries before it. So the point
 * that pays is the `end`, after the last message: the next call of the turn (or, on a turn's first
 * call, the next turn) reads all of it back. It is placed first, whenever the request is long enough;
 * then, only where each keeps the minimum to its neighbours (so none stops the `end` being written):
 * - `history` after the block of finished turns, which changes every `historyBlockTurns` turns;
 * - `system` after the tools and system prompt;
 * - `previous` at the latest end of an earlier call, which that call wrote with its `end` point, for a
 *   read that does not depend on the look-back.
 */
export function placeCachePoints(layout: CacheLayout, policy: PromptCachePolicy, ratio: number): CachePoint[] {
  const tokens = layout.prefixTokens;
  const end = tokens.length - 1;
  const reaches = (from: number, to: number) => (to - from) * ratio >= policy.minTokensPerCheckpoint;
  if (end < 0 || !reaches(0, tokens[end])) return [];
  const chosen = new Map<number, Omit<CachePoint, "after" | "prefixTokens">>([[end, { kind: "end", ttl: policy.turnTtl }]]);
  const fits = (index: number) => {
    if (chosen.has(index)) return false;
    const before = Math.max(-1, ...[...chosen.keys()].filter((i) => i < index));
    const after = Math.min(...[...chosen.keys()].filter((i) => i > index));
    return reaches(before < 0 ? 0 : tokens[before], tokens[index]) && reaches(tokens[index], tokens[after]);
  };
  if (layout.historyBlockEnd !== undefined && fits(layout.historyBlockEnd)) chosen.set(layout.historyBlockEnd, { kind: "history", ttl: policy.stableTtl });
  if (layout.system !== undefined && fits(layout.system)) chosen.set(layout.system, { kind: "system", ttl: policy.stableTtl });
  const previous = layout.earlierEnds.findLast(fits);
  if (previous !== undefined) chosen.set(previous, { kind: "previous", ttl: policy.turnTtl });
  return [...chosen].sort(([a], [b]) => a - b).map(([after, point]) => ({ after, ...point, prefixTokens: tokens[after] }));
}

function blocksOf(content: BaseMessage["content"]): Exclude<BaseMessage["content"], string> {
  return typeof content === "string" ? (content.length > 0 ? [{ type: "text", text: content }] : []) : content;
}

function withCachePoint(message: BaseMessage, ttl: CacheTtl): BaseMessage {
  const block: CachePointBlock = { type: "cache_point", cachePoint: ttl === "5m" ? { type: "default" } : { type: "default", ttl } };
  const content = [...blocksOf(message.content), block] as Exclude<BaseMessage["content"], string>;
  switch (message.type) {
    case "system":
      return new SystemMessage({ content });
    case "human":
      return new HumanMessage({ content, id: message.id });
    case "ai":
      return new AIMessage({ content, id: message.id, tool_calls: (message as AIMessage).tool_calls });
    case "tool": {
      const tool = message as ToolMessage;
      return new ToolMessage({ content, tool_call_id: tool.tool_call_id, name: tool.name, status: tool.status, id: tool.id });
    }
    default:
      throw new InvalidModelViewError(`a ${message.type} message cannot carry a cache point: Converse takes none`, CONVERSE_RULES.knownMessageType);
  }
}

/**
 * A view's messages as sent to a model that takes Bedrock cache points (`ChatBedrockConverse`): each
 * point is a `cachePoint` block appended to the content of the message it follows. The view's own
 * messages are left as they are (they are what is recorded and counted; a cache point costs no token).
 */
export function withCachePoints(messages: readonly BaseMessage[], cachePoints: readonly CachePoint[]): BaseMessage[] {
  const sent = [...messages];
  for (const point of cachePoints) sent[point.after] = withCachePoint(sent[point.after], point.ttl);
  return sent;
}
