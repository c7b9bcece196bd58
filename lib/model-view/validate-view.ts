import type { BaseMessage } from "@langchain/core/messages";
import { InvalidModelViewError } from "../errors.js";
import { isCachePointBlock, MAX_CACHE_POINTS } from "./cache-points.js";
import { CONVERSE_RULES, type ConverseRule } from "./converse-rules.js";

export interface ValidateConverseViewOptions {
  /** Whether the request carries a tool configuration; Converse rejects tool blocks without one. Default: true. */
  toolsConfigured?: boolean;
}

/** One Converse message as `ChatBedrockConverse` would send it, reduced to what the rules look at. */
interface ConverseTurn {
  role: "user" | "assistant";
  /** Index of the (first) LangChain message it came from, for error messages. */
  index: number;
  toolUseIds: string[];
  toolResultIds: string[];
}

function fail(rule: ConverseRule, message: string): never {
  throw new InvalidModelViewError(`invalid model view (${rule}): ${message}`, rule);
}

function isBlank(text: string): boolean {
  return text.trim().length === 0;
}

/** Counts content blocks other than cache points (a cache point alone is no content); any text block must carry non-blank text. */
function contentBlocks(content: BaseMessage["content"], index: number, allowEmptyString: boolean): number {
  if (typeof content === "string") {
    if (content.length === 0) {
      if (allowEmptyString) return 0;
      fail(CONVERSE_RULES.noEmptyContent, `message ${index} has empty content`);
    }
    if (isBlank(content)) fail(CONVERSE_RULES.noBlankText, `message ${index} has blank text`);
    return 1;
  }
  for (const block of content) {
    const text = typeof block === "string" ? block : block.type === "text" ? (block as { text?: unknown }).text : undefined;
    if (typeof text === "string" && isBlank(text)) fail(CONVERSE_RULES.noBlankText, `message ${index} has a blank text block`);
  }
  return content.length - cachePoints(content);
}

function cachePoints(content: BaseMessage["content"]): number {
  return typeof content === "string" ? 0 : content.filter(isCachePointBlock).length;
}

function toConverseTurn(message: BaseMessage, index: number): ConverseTurn {
  switch (message.type) {
    case "human": {
      if (contentBlocks(message.content, index, false) === 0) fail(CONVERSE_RULES.noEmptyContent, `message ${index} has no content blocks`);
      return { role: "user", index, toolUseIds: [], toolResultIds: [] };
    }
    case "ai": {
      // An empty string is not sent as a block, so a message made only of tool calls is fine.
      const calls = (message as { tool_calls?: { id?: string }[] }).tool_calls ?? [];
      const toolUseIds = calls.map((call) => {
        if (typeof call.id !== "string" || call.id.length === 0) fail(CONVERSE_RULES.toolUseId, `message ${index} has a tool call without an id`);
        return call.id;
      });
      if (contentBlocks(message.content, index, true) + calls.length === 0)
        fail(CONVERSE_RULES.noEmptyContent, `message ${index} has neither text nor tool calls`);
      return { role: "assistant", index, toolUseIds, toolResultIds: [] };
    }
    case "tool": {
      // The result's own content becomes the toolResult's blocks: it must not be empty either.
      if (contentBlocks(message.content, index, false) === 0) fail(CONVERSE_RULES.noEmptyContent, `message ${index} has an empty tool result`);
      const id = (message as { tool_call_id?: string }).tool_call_id;
      if (typeof id !== "string" || id.length === 0) fail(CONVERSE_RULES.toolUseId, `message ${index} is a tool result without a tool call id`);
      return { role: "user", index, toolUseIds: [], toolResultIds: [id] };
    }
    default:
      return fail(CONVERSE_RULES.knownMessageType, `message ${index} has type ${message.type}, which Converse does not take`);
  }
}

function assertUnique(ids: string[], index: number): void {
  if (new Set(ids).size !== ids.length) fail(CONVERSE_RULES.toolIdsUnique, `message ${index} repeats a tool id`);
}

/**
 * Checks a view against the Bedrock Converse rules, as `ChatBedrockConverse` would send it:
 * system messages lifted out, tool messages sent as user `toolResult` blocks and consecutive tool
 * messages merged into one user message (the client does that; it merges nothing else).
 *
 * @throws InvalidModelViewError naming the broken rule (one of `CONVERSE_RULES`).
 */
export function validateConverseView(messages: readonly BaseMessage[], options: ValidateConverseViewOptions = {}): void {
  const toolsConfigured = options.toolsConfigured ?? true;
  const turns: ConverseTurn[] = [];
  let systemAllowed = true;
  const points = messages.reduce((n, message) => n + cachePoints(message.content), 0);
  if (points > MAX_CACHE_POINTS) fail(CONVERSE_RULES.cachePointLimit, `the view has ${points} cache points, over Bedrock's ${MAX_CACHE_POINTS}`);
  messages.forEach((message, index) => {
    if (message.type === "system") {
      if (!systemAllowed) fail(CONVERSE_RULES.systemFirst, `message ${index} is a system message after the conversation started`);
      contentBlocks(message.content, index, false);
      return;
    }
    systemAllowed = false;
    const turn = toConverseTurn(message, index);
    const previous = turns[turns.length - 1];
    if (previous && turn.toolResultIds.length > 0 && previous.role === "user" && previous.toolResultIds.length > 0) {
      previous.toolResultIds.push(...turn.toolResultIds);
      return;
    }
    turns.push(turn);
  });

  if (turns.length === 0) fail(CONVERSE_RULES.notEmpty, "the view has no user or assistant message");
  if (turns[0].role !== "user") fail(CONVERSE_RULES.firstMessageUser, `message ${turns[0].index} is the first and is not from the user`);
  const last = turns[turns.length - 1];
  if (last.role !== "user") fail(CONVERSE_RULES.lastMessageUser, `message ${last.index} is the last and is not from the user`);

  turns.forEach((turn, i) => {
    const previous = turns[i - 1];
    if (previous && previous.role === turn.role) {
      fail(CONVERSE_RULES.rolesAlternate, `messages ${previous.index} and ${turn.index} are both ${turn.role} messages`);
    }
    if (!toolsConfigured && (turn.toolUseIds.length > 0 || turn.toolResultIds.length > 0)) {
      fail(CONVERSE_RULES.toolConfigPresent, `message ${turn.index} has tool blocks but the request has no tool configuration`);
    }
    assertUnique(turn.toolUseIds, turn.index);
    assertUnique(turn.toolResultIds, turn.index);
    const unmatched = turn.toolResultIds.find((id) => !previous?.toolUseIds.includes(id));
    if (unmatched !== undefined)
      fail(CONVERSE_RULES.toolResultHasUse, `message ${turn.index} answers tool call ${unmatched}, which the message before it did not make`);
    // Extra or repeated results are reported when the next message is checked.
    const unanswered = turn.toolUseIds.find((id) => !turns[i + 1]?.toolResultIds.includes(id));
    if (unanswered !== undefined) fail(CONVERSE_RULES.toolUseAnswered, `tool call ${unanswered} of message ${turn.index} is not answered in the next message`);
  });
}
