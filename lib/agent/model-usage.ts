import type { AIMessage } from "@langchain/core/messages";
import type { ModelPrice } from "../config/model-config.js";
import type { Usage } from "../store/turn-record.js";

const TOKENS_PER_PRICE_UNIT = 1_000_000;

/** Cache writes with the 1-hour TTL, when Bedrock details writes by TTL (`usage.cacheDetails` of a Converse response). */
function oneHourWrites(message: AIMessage): number {
  const usage = message.response_metadata?.usage as { cacheDetails?: { ttl?: string; inputTokens?: number }[] } | undefined;
  return (usage?.cacheDetails ?? []).reduce((n, detail) => n + (detail.ttl === "1h" ? (detail.inputTokens ?? 0) : 0), 0);
}

/**
 * What a call cost in US dollars: input tokens neither read from nor written to the cache at the
 * input price, reads at the read price, writes at the 5-minute or (`oneHourWriteTokens` of them)
 * the 1-hour write price, output at the output price.
 */
export function costOf(usage: Usage, price: ModelPrice, oneHourWriteTokens = 0): number {
  const read = usage.cacheReadTokens ?? 0;
  const written = usage.cacheWriteTokens ?? 0;
  const longWritten = Math.min(oneHourWriteTokens, written);
  const dollars =
    (usage.inputTokens - read - written) * price.input +
    usage.outputTokens * price.output +
    read * price.cacheRead +
    (written - longWritten) * price.cacheWrite +
    longWritten * price.cacheWrite1h;
  return dollars / TOKENS_PER_PRICE_UNIT;
}

/**
 * The usage a model reported with its answer, as the turn record keeps it. `ChatBedrockConverse`
 * reports every input token in `input_tokens` (Bedrock's `inputTokens` plus cache reads and writes)
 * and the cache's share in `input_token_details`.
 */
export function reportedUsage(message: AIMessage, price?: ModelPrice): Usage {
  const u = message.usage_metadata;
  const usage: Usage = {
    inputTokens: u?.input_tokens ?? 0,
    outputTokens: u?.output_tokens ?? 0,
    totalTokens: u?.total_tokens ?? 0,
    cacheReadTokens: u?.input_token_details?.cache_read ?? 0,
    cacheWriteTokens: u?.input_token_details?.cache_creation ?? 0,
  };
  if (price) usage.costUsd = costOf(usage, price, oneHourWrites(message));
  return usage;
}

/**
 * Why the model stopped, as it said (`gen_ai.response.finish_reasons`): Bedrock's `stopReason`
 * (`end_turn`, `tool_use`, `max_tokens`; under `messageStop` when streamed), an OpenAI-compatible
 * server's `finish_reason`. Empty when the model names none.
 */
export function finishReasonsOf(message: AIMessage): string[] {
  const metadata = (message.response_metadata ?? {}) as { stopReason?: unknown; messageStop?: { stopReason?: unknown }; finish_reason?: unknown };
  const reason = metadata.stopReason ?? metadata.messageStop?.stopReason ?? metadata.finish_reason;
  return typeof reason === "string" ? [reason] : [];
}
