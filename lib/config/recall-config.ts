import { z } from "zod";
import { parseOrThrow } from "../validation.js";
import { envSchemaOf, optionalVariable, setting, withDefaults } from "./settings.js";

// The defaults live here rather than beside the recall code they configure, so that loading the
// configuration (as the webhook functions do) loads neither the tokenizer nor the Bedrock SDK.

/** Dimensions of each embedding: Titan Text Embeddings V2 offers 256, 512 and 1,024; 512 keeps a turn's vector at 2 KB. */
export const DEFAULT_EMBEDDING_DIMENSIONS = 512;
/**
 * Ceiling on one search's answer, in tokens, all results together. Like `read_tool_output`'s, it stays
 * below the view's per-output threshold (`DEFAULT_VIEW_TOOL_OUTPUT_TOKENS` by default), so an answer is never itself replaced by a notice.
 */
export const DEFAULT_RECALL_MAX_TOKENS = 1_500;

/** The settings of `search_conversation`, defined once (see `settings.ts`). */
export const RECALL_SETTINGS = {
  RECALL_EMBEDDINGS_MODEL_ID: setting({
    schema: z.string().min(1),
    defaultText: "unset (lexical search only)",
    description: "Bedrock embeddings model for `search_conversation`, e.g. `amazon.titan-embed-text-v2:0`",
  }),
  RECALL_EMBEDDINGS_REGION: setting({
    schema: z.string().min(1),
    defaultText: "`BEDROCK_REGION` / `AWS_REGION`",
    description: "region of the embeddings model",
  }),
  RECALL_EMBEDDING_DIMENSIONS: setting({
    schema: z.enum(["256", "512", "1024"]).transform(Number),
    default: DEFAULT_EMBEDDING_DIMENSIONS,
    description: "256, 512 or 1024",
  }),
  RECALL_MAX_TOKENS: setting({
    schema: z.coerce.number().int().min(200).max(1_500),
    default: DEFAULT_RECALL_MAX_TOKENS,
    description: "ceiling on one search answer, all results together (200–1,500)",
  }),
};

const envSchema = envSchemaOf(RECALL_SETTINGS).extend({
  BEDROCK_REGION: optionalVariable(z.string().min(1)),
  AWS_REGION: optionalVariable(z.string().min(1)),
});

/** `search_conversation` and its index (`lib/recall`). */
export interface RecallConfig {
  /** Bedrock embeddings model (Titan Text Embeddings V2, e.g. `amazon.titan-embed-text-v2:0`). Unset: lexical search only. */
  embeddingsModelId?: string;
  /** Region of the embeddings model. Default: the chat model's region, else `AWS_REGION`. */
  embeddingsRegion?: string;
  /** 256, 512 or 1,024. Default: `DEFAULT_EMBEDDING_DIMENSIONS`. */
  embeddingDimensions: number;
  /** Tokens of one search answer, all results together; at most 1,500. Default: `DEFAULT_RECALL_MAX_TOKENS`. */
  maxTokens: number;
}

export function loadRecallConfig(env: Record<string, string | undefined>): RecallConfig {
  const parsed = parseOrThrow(envSchema, env, "invalid configuration");
  const e = { ...parsed, ...withDefaults(RECALL_SETTINGS, parsed) };
  return {
    embeddingsModelId: e.RECALL_EMBEDDINGS_MODEL_ID,
    embeddingsRegion: e.RECALL_EMBEDDINGS_REGION ?? e.BEDROCK_REGION ?? e.AWS_REGION,
    embeddingDimensions: e.RECALL_EMBEDDING_DIMENSIONS,
    maxTokens: e.RECALL_MAX_TOKENS,
  };
}
