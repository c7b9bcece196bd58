import { z } from "zod";
import { parseOrThrow } from "../validation.js";
import { envSchemaOf, setting, withDefaults } from "./settings.js";

/** Finished turns kept in the model view as question/answer pairs. */
export const DEFAULT_VIEW_FINISHED_TURNS = 6;
/** A single tool output above this many tokens is replaced in the view by a notice. */
export const DEFAULT_VIEW_TOOL_OUTPUT_TOKENS = 2_000;
/** Hard ceiling on the tokens of one model view (system prompt and tool schemas included), in the model's tokens. */
export const DEFAULT_VIEW_TOTAL_BUDGET = 24_000;
/** The oldest finished turn in the view moves this many turns at a time, so the cached history prefix lasts that long. */
export const DEFAULT_VIEW_HISTORY_BLOCK_TURNS = 6;
/** Safety margin over the model's estimated tokens before its first reported usage in a container. */
export const DEFAULT_VIEW_TOKEN_MARGIN = 0.5;
/** The smallest safety margin once the estimate has settled. */
export const DEFAULT_VIEW_TOKEN_MARGIN_MIN = 0.02;
/** Tokens Bedrock needs between cache points for Claude Sonnet (the first point after 1,024, the second after 2,048). */
export const DEFAULT_PROMPT_CACHE_MIN_TOKENS = 1_024;
/** TTL of the cache points of the system prompt and finished-turn block, and of the active turn's: Bedrock's default. */
export const DEFAULT_PROMPT_CACHE_TTL: "5m" | "1h" = "5m";

const positiveInt = z.coerce.number().int().positive();
const cacheTtl = z.enum(["5m", "1h"]);
const margin = z.coerce.number().min(0).max(4);

/** The settings of the model view and its prompt cache, defined once (see `settings.ts`). */
export const VIEW_SETTINGS = {
  VIEW_FINISHED_TURNS: setting({
    schema: z.coerce.number().int().min(0),
    default: DEFAULT_VIEW_FINISHED_TURNS,
    description: "finished turns kept as question/answer pairs",
  }),
  VIEW_TOOL_OUTPUT_TOKENS: setting({
    schema: positiveInt,
    default: DEFAULT_VIEW_TOOL_OUTPUT_TOKENS,
    description: "a tool output above this is replaced in the view by a notice",
  }),
  VIEW_TOTAL_BUDGET: setting({
    schema: positiveInt,
    default: DEFAULT_VIEW_TOTAL_BUDGET,
    description: "hard ceiling on the view's tokens, in the model's tokens",
  }),
  VIEW_HISTORY_BLOCK_TURNS: setting({
    schema: positiveInt,
    default: DEFAULT_VIEW_HISTORY_BLOCK_TURNS,
    description: "the oldest kept finished turn moves this many turns at a time",
  }),
  VIEW_TOKEN_MARGIN: setting({
    schema: margin,
    default: DEFAULT_VIEW_TOKEN_MARGIN,
    description: "safety margin over the token estimate before any usage is seen",
  }),
  VIEW_TOKEN_MARGIN_MIN: setting({ schema: margin, default: DEFAULT_VIEW_TOKEN_MARGIN_MIN, description: "the floor of that margin once usage is seen" }),
  PROMPT_CACHE: setting({ schema: z.enum(["on", "off"]), default: "on", description: "`off` sends no cache points" }),
  PROMPT_CACHE_MIN_TOKENS: setting({
    schema: positiveInt,
    default: DEFAULT_PROMPT_CACHE_MIN_TOKENS,
    description: "the model's minimum tokens per cache checkpoint",
  }),
  PROMPT_CACHE_STABLE_TTL: setting({
    schema: cacheTtl,
    default: DEFAULT_PROMPT_CACHE_TTL,
    description: "TTL of the system and history cache points (`5m` or `1h`)",
  }),
  PROMPT_CACHE_TURN_TTL: setting({
    schema: cacheTtl,
    default: DEFAULT_PROMPT_CACHE_TTL,
    description: "TTL of the other cache points (`5m` or `1h`, not longer than `PROMPT_CACHE_STABLE_TTL`)",
  }),
  SYSTEM_PROMPT: setting({ schema: z.string().min(1), defaultText: "built in", description: "the system prompt" }),
};

// Bedrock rejects a 1-hour cache point after a 5-minute one, and the stable points come first.
const envSchema = envSchemaOf(VIEW_SETTINGS).refine(
  (e) => !((e.PROMPT_CACHE_STABLE_TTL ?? DEFAULT_PROMPT_CACHE_TTL) === "5m" && e.PROMPT_CACHE_TURN_TTL === "1h"),
  { path: ["PROMPT_CACHE_TURN_TTL"], message: "must not be longer than PROMPT_CACHE_STABLE_TTL" },
);

export interface PromptCacheConfig {
  /** Whether views sent to Bedrock carry cache points. Default: true. */
  enabled: boolean;
  /** Default: `DEFAULT_PROMPT_CACHE_MIN_TOKENS`. */
  minTokensPerCheckpoint: number;
  /** TTL of the system prompt's and finished-turn block's points. Default: `DEFAULT_PROMPT_CACHE_TTL`. */
  stableTtl: "5m" | "1h";
  /** TTL of the points within the growing part of the view. Default: `DEFAULT_PROMPT_CACHE_TTL`. */
  turnTtl: "5m" | "1h";
}

export interface ViewConfig {
  /** Default: `DEFAULT_VIEW_FINISHED_TURNS`. */
  finishedTurns: number;
  /** Default: `DEFAULT_VIEW_HISTORY_BLOCK_TURNS`. */
  historyBlockTurns: number;
  /** Default: `DEFAULT_VIEW_TOOL_OUTPUT_TOKENS`. */
  toolOutputTokens: number;
  /** In the model's tokens. Default: `DEFAULT_VIEW_TOTAL_BUDGET`. */
  totalBudget: number;
  /** The token estimate's safety margin before any usage is seen, and its floor. Defaults: `DEFAULT_VIEW_TOKEN_MARGIN`, `DEFAULT_VIEW_TOKEN_MARGIN_MIN`. */
  tokenMargin: { initial: number; min: number };
  promptCache: PromptCacheConfig;
  systemPrompt?: string;
}

export function loadViewConfig(env: Record<string, string | undefined>): ViewConfig {
  const e = withDefaults(VIEW_SETTINGS, parseOrThrow(envSchema, env, "invalid configuration"));
  return {
    finishedTurns: e.VIEW_FINISHED_TURNS,
    historyBlockTurns: e.VIEW_HISTORY_BLOCK_TURNS,
    toolOutputTokens: e.VIEW_TOOL_OUTPUT_TOKENS,
    totalBudget: e.VIEW_TOTAL_BUDGET,
    tokenMargin: { initial: e.VIEW_TOKEN_MARGIN, min: e.VIEW_TOKEN_MARGIN_MIN },
    promptCache: {
      enabled: e.PROMPT_CACHE === "on",
      minTokensPerCheckpoint: e.PROMPT_CACHE_MIN_TOKENS,
      stableTtl: e.PROMPT_CACHE_STABLE_TTL,
      turnTtl: e.PROMPT_CACHE_TURN_TTL,
    },
    systemPrompt: e.SYSTEM_PROMPT,
  };
}
