import { z } from "zod";
import { DEFAULT_EMBEDDING_DIMENSIONS } from "../recall/embedder.js";
import { DEFAULT_RECALL_MAX_TOKENS } from "../recall/search-conversation-tool.js";
import { parseOrThrow } from "../validation.js";

const envSchema = z.object({
  RECALL_EMBEDDINGS_MODEL_ID: z.string().min(1).optional(),
  RECALL_EMBEDDINGS_REGION: z.string().min(1).optional(),
  RECALL_EMBEDDING_DIMENSIONS: z.enum(["256", "512", "1024"]).optional(),
  RECALL_MAX_TOKENS: z.coerce.number().int().min(200).max(1_500).optional(),
  BEDROCK_REGION: z.string().min(1).optional(),
  AWS_REGION: z.string().min(1).optional(),
});

/** `search_conversation` and its index (`lib/recall`). */
export interface RecallConfig {
  /** Bedrock embeddings model (Titan Text Embeddings V2, e.g. `amazon.titan-embed-text-v2:0`). Unset: lexical search only. */
  embeddingsModelId?: string;
  /** Region of the embeddings model. Default: the chat model's region, else `AWS_REGION`. */
  embeddingsRegion?: string;
  /** 256, 512 or 1,024. Default: `DEFAULT_EMBEDDING_DIMENSIONS` (512). */
  embeddingDimensions: number;
  /** Tokens of one search answer, all results together; at most 1,500. Default: `DEFAULT_RECALL_MAX_TOKENS` (1,500). */
  maxTokens: number;
}

export function loadRecallConfig(env: Record<string, string | undefined>): RecallConfig {
  const e = parseOrThrow(envSchema, env, "invalid configuration");
  return {
    embeddingsModelId: e.RECALL_EMBEDDINGS_MODEL_ID,
    embeddingsRegion: e.RECALL_EMBEDDINGS_REGION ?? e.BEDROCK_REGION ?? e.AWS_REGION,
    embeddingDimensions: Number(e.RECALL_EMBEDDING_DIMENSIONS ?? DEFAULT_EMBEDDING_DIMENSIONS),
    maxTokens: e.RECALL_MAX_TOKENS ?? DEFAULT_RECALL_MAX_TOKENS,
  };
}
