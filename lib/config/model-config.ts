import { z } from "zod";
import { parseOrThrow } from "../validation.js";
import { envSchemaOf, setting, withDefaults } from "./settings.js";

/** Model provider used when `MODEL_PROVIDER` is not set: offline and deterministic. */
export const DEFAULT_MODEL_PROVIDER = "local";
/** Bedrock model or inference profile used when `BEDROCK_MODEL_ID` is not set. */
export const DEFAULT_BEDROCK_MODEL_ID = "us.anthropic.claude-sonnet-4-20250514-v1:0";
/** AWS region used when neither `BEDROCK_REGION` nor `AWS_REGION` is set. */
export const DEFAULT_REGION = "us-east-1";
/** Upper bound on the tokens the model may generate per call. */
export const DEFAULT_MAX_OUTPUT_TOKENS = 2_048;

/** A model's on-demand price in US dollars per million tokens, by kind of token. */
export interface ModelPrice {
  /** Input tokens neither read from nor written to the cache. */
  input: number;
  output: number;
  cacheRead: number;
  /** Written with the default 5-minute TTL. */
  cacheWrite: number;
  /** Written with the 1-hour TTL. */
  cacheWrite1h: number;
}

const CLAUDE_SONNET_4_PRICE: ModelPrice = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75, cacheWrite1h: 6 };

/**
 * Bedrock on-demand prices (US regions) used when `MODEL_PRICES` does not name the model. A model
 * id is looked up as given, then without its inference-profile prefix (`us.`, `eu.`, `apac.`, `global.`).
 */
export const DEFAULT_MODEL_PRICES: Record<string, ModelPrice> = {
  "anthropic.claude-sonnet-4-20250514-v1:0": CLAUDE_SONNET_4_PRICE,
  "anthropic.claude-sonnet-4-5-20250929-v1:0": CLAUDE_SONNET_4_PRICE,
};

/** The price of a model by its id or its id without the inference-profile prefix; undefined when none is configured. */
export function priceOf(prices: Record<string, ModelPrice>, modelId: string): ModelPrice | undefined {
  return prices[modelId] ?? prices[modelId.replace(/^(us|eu|apac|global)\./, "")];
}

const positiveInt = z.coerce.number().int().positive();
const price = z.number().nonnegative();
const modelPrices = z
  .string()
  .transform((text, ctx) => {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      ctx.addIssue({ code: "custom", message: "not JSON" });
      return z.NEVER;
    }
  })
  .pipe(z.record(z.string().min(1), z.object({ input: price, output: price, cacheRead: price, cacheWrite: price, cacheWrite1h: price }).strict()));

/** The settings of the chat model, defined once (see `settings.ts`). */
export const MODEL_SETTINGS = {
  MODEL_PROVIDER: setting({
    schema: z.enum(["local", "bedrock", "openai-compatible"]),
    default: DEFAULT_MODEL_PROVIDER,
    description: "`local` (the offline stand-in), `bedrock`, or `openai-compatible` (Ollama, LM Studio, vLLM, a gateway)",
  }),
  AWS_BEARER_TOKEN_BEDROCK: setting({
    schema: z.string().min(1),
    defaultText: "unset",
    description: "a Bedrock API key: the AWS SDK sends it as a bearer token instead of signing with AWS credentials",
  }),
  OPENAI_BASE_URL: setting({
    schema: z.string().url(),
    defaultText: "unset",
    description: "with `openai-compatible`: the server's OpenAI API base, e.g. `http://127.0.0.1:11434/v1` (Ollama)",
  }),
  OPENAI_MODEL: setting({ schema: z.string().min(1), defaultText: "unset", description: "with `openai-compatible`: the model name the server knows" }),
  OPENAI_API_KEY: setting({
    schema: z.string().min(1),
    defaultText: "unset",
    description: "with `openai-compatible`: the key, for a server that asks for one",
  }),
  BEDROCK_MODEL_ID: setting({ schema: z.string().min(1), default: DEFAULT_BEDROCK_MODEL_ID, description: "model or inference profile" }),
  BEDROCK_REGION: setting({ schema: z.string().min(1), defaultText: "`AWS_REGION`, else `us-east-1`", description: "region of the Bedrock runtime" }),
  AWS_REGION: setting({ schema: z.string().min(1), defaultText: "set by Lambda", description: "the standard AWS region, used when `BEDROCK_REGION` is unset" }),
  MODEL_MAX_TOKENS: setting({ schema: positiveInt, default: DEFAULT_MAX_OUTPUT_TOKENS, description: "`maxTokens` of every model call" }),
  BEDROCK_COUNT_TOKENS: setting({
    schema: z.enum(["true", "false"]),
    default: "false",
    description: "count a container's first request with Bedrock's CountTokens (not every model has it)",
  }),
  MODEL_PRICES: setting({
    schema: modelPrices,
    defaultText: "Claude Sonnet 4 and 4.5",
    description: 'JSON `{"<model id>": {input, output, cacheRead, cacheWrite, cacheWrite1h}}`, USD per million tokens, over the defaults',
  }),
};

const envSchema = envSchemaOf(MODEL_SETTINGS)
  .refine((e) => e.MODEL_PROVIDER !== "openai-compatible" || e.OPENAI_BASE_URL !== undefined, {
    path: ["OPENAI_BASE_URL"],
    message: "required with MODEL_PROVIDER=openai-compatible (e.g. http://127.0.0.1:11434/v1)",
  })
  .refine((e) => e.MODEL_PROVIDER !== "openai-compatible" || e.OPENAI_MODEL !== undefined, {
    path: ["OPENAI_MODEL"],
    message: "required with MODEL_PROVIDER=openai-compatible (the model name the server knows)",
  });

export type ModelProvider = "local" | "bedrock" | "openai-compatible";

/** An OpenAI-compatible chat completions server (`MODEL_PROVIDER=openai-compatible`). */
export interface OpenAiCompatibleConfig {
  baseUrl: string;
  model: string;
  /** Sent as the bearer token when set; a server that needs none gets a placeholder. */
  apiKey?: string;
}

export interface ModelConfig {
  provider: ModelProvider;
  bedrockModelId: string;
  region: string;
  maxOutputTokens: number;
  /** Per-model prices for each call's cost: `DEFAULT_MODEL_PRICES` with `MODEL_PRICES` over it. */
  prices: Record<string, ModelPrice>;
  /** Calibrate a model's first call in a container with Bedrock's CountTokens (not every model has it). Default: false. */
  countTokens: boolean;
  /** A Bedrock API key (`AWS_BEARER_TOKEN_BEDROCK`), sent instead of AWS credentials. Default: none. */
  bedrockBearerToken?: string;
  /** With `openai-compatible`: the server, the model and the key. */
  openAiCompatible?: OpenAiCompatibleConfig;
}

export function loadModelConfig(env: Record<string, string | undefined>): ModelConfig {
  const e = withDefaults(MODEL_SETTINGS, parseOrThrow(envSchema, env, "invalid configuration"));
  return {
    provider: e.MODEL_PROVIDER,
    bedrockModelId: e.BEDROCK_MODEL_ID,
    region: e.BEDROCK_REGION ?? e.AWS_REGION ?? DEFAULT_REGION,
    maxOutputTokens: e.MODEL_MAX_TOKENS,
    prices: { ...DEFAULT_MODEL_PRICES, ...e.MODEL_PRICES },
    countTokens: e.BEDROCK_COUNT_TOKENS === "true",
    bedrockBearerToken: e.AWS_BEARER_TOKEN_BEDROCK,
    openAiCompatible:
      e.MODEL_PROVIDER === "openai-compatible" && e.OPENAI_BASE_URL && e.OPENAI_MODEL
        ? { baseUrl: e.OPENAI_BASE_URL, model: e.OPENAI_MODEL, apiKey: e.OPENAI_API_KEY }
        : undefined,
  };
}
