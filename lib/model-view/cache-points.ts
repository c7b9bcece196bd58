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
 * The cache points of a view, most stable first. A point is placed only where the model's tokens since
 * the previous point reach `minTokensPerCheckpoint` (Bedrock caches nothing at a shorter one), so:
 * - `system` after the tools and system prompt, when they are long enough alone;
 * - `history` after the block of finished turns, which changes every `historyBlockTurns` turns;
 * - `previous` at the latest end of an earlier call that was itself far enough from its own previous point
 *   to have been written: every call places its `end` by the same rule, so replaying it over `earlierEnds`
 *   finds the prefix the cache holds, without remembering anything between calls;
 * - `end` after the last message, which the next call of the turn (or, on a turn's first call, the next
 *   turns) read back.
 */
export function placeCachePoints(layout: CacheLayout, policy: PromptCachePolicy, ratio: number): CachePoint[] {
  const points: CachePoint[] = [];
  const tokens = layout.prefixTokens;
  let last = 0;
  const reaches = (index: number, from: number) => (tokens[index] - from) * ratio >= policy.minTokensPerCheckpoint;
  const place = (after: number, kind: CachePoint["kind"], ttl: CacheTtl) => {
    points.push({ after, kind, ttl, prefixTokens: tokens[after] });
    last = tokens[after];
  };
  if (layout.system !== undefined && reaches(layout.system, last)) place(layout.system, "system", policy.stableTtl);
  if (layout.historyBlockEnd !== undefined && reaches(layout.historyBlockEnd, last)) place(layout.historyBlockEnd, "history", policy.stableTtl);
  let previous: number | undefined;
  let written = last;
  for (const index of layout.earlierEnds) {
    if (!reaches(index, written)) continue;
    previous = index;
    written = tokens[index];
  }
  if (previous !== undefined) place(previous, "previous", policy.turnTtl);
  const end = tokens.length - 1;
  if (reaches(end, last)) place(end, "end", policy.turnTtl);
  return points;
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
