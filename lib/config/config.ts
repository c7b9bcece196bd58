import { z } from "zod";
import { loadRecallConfig, type RecallConfig } from "./recall-config.js";
import { loadTracingConfig, type TracingConfig } from "./tracing-config.js";
import { loadLimitsConfig, type LimitsConfig } from "./limits-config.js";
import { loadLifecycleConfig, type LifecycleConfig } from "./lifecycle-config.js";
import { loadMcpOAuthConfig, type McpOAuthConfig } from "./mcp-oauth-config.js";
import { loadEncryptionConfig, type EncryptionConfig } from "./encryption-config.js";
import { loadMcpConfig, type McpConfig } from "./mcp-servers-config.js";
import { loadToolsConfig, type ToolsConfig } from "./tools-config.js";
import { CREDENTIAL_SECRET_NAMES, CREDENTIAL_SECRETS, type CredentialSecretName } from "./credentials.js";
import { ValidationError } from "../errors.js";
import { issueDetails, parseJsonSetting, parseOrThrow } from "../validation.js";
import { durationMs, durationSeconds, envSchemaOf, setting, withDefaults, type Settings } from "./settings.js";

/** Database name used when `MONGODB_DB` is not set. */
export const DEFAULT_DB_NAME = "threadwise";
/** Model provider used when `MODEL_PROVIDER` is not set: offline and deterministic. */
export const DEFAULT_MODEL_PROVIDER = "local";
/** Bedrock model or inference profile used when `BEDROCK_MODEL_ID` is not set. */
export const DEFAULT_BEDROCK_MODEL_ID = "us.anthropic.claude-sonnet-4-20250514-v1:0";
/** AWS region used when neither `BEDROCK_REGION` nor `AWS_REGION` is set. */
export const DEFAULT_REGION = "us-east-1";
/** Upper bound on the tokens the model may generate per call. */
export const DEFAULT_MAX_OUTPUT_TOKENS = 2_048;
/** Longest user message accepted, in characters. */
export const DEFAULT_MAX_MESSAGE_CHARS = 16_000;
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

/** How long a lease lasts unless renewed: a crashed turn blocks its conversation for at most this long. */
export const DEFAULT_LEASE_TTL_MS = 120_000;
/**
 * How long an operation waits for a reachable server before failing. Short, so that an
 * outage answers 503 within an API Gateway request instead of hanging past it.
 */
export const DEFAULT_SERVER_SELECTION_TIMEOUT_MS = 5_000;
/**
 * How long an operation waits for an answer on an open connection before failing (503). It ends
 * an operation on a connection that was dropped without a word (a NAT or firewall forgetting it
 * while a Lambda container was frozen), and is far longer than any single operation here takes.
 */
export const DEFAULT_SOCKET_TIMEOUT_MS = 10_000;
/** Days of inactivity after which a conversation expires from every collection. */
export const DEFAULT_RETENTION_DAYS = 90;
/**
 * Latest checkpoints of each namespace that {@link ThreadwiseSaver.prune} keeps besides every
 * turn's start and end. Resuming needs only the latest; a few more leave the end of the last
 * turn inspectable.
 */
export const DEFAULT_CHECKPOINTS_KEPT = 3;

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
/** Audience expected in API JWTs. */
export const DEFAULT_JWT_AUDIENCE = "threadwise";
/** Issuer of locally minted JWTs. */
export const DEFAULT_LOCAL_ISSUER = "threadwise-local";
/** Port of the local server. */
export const DEFAULT_PORT = 3000;
/** How often the local server expires approvals past their deadline: a minute, so a local user sees an expiry soon after it is due. */
export const DEFAULT_APPROVAL_SWEEP_SECONDS = 60;
/** How often the local server's recovery sweep runs: a minute, as the stack's schedule (`TURN_RECOVERY_INTERVAL`) runs it in AWS. */
export const DEFAULT_TURN_RECOVERY_SWEEP_SECONDS = 60;
/** Longest a turn runs inside an API request before it is handed to the worker (API Gateway gives 30 s). */
export const DEFAULT_SYNC_TURN_DEADLINE_MS = 20_000;
/** Receives of one queued turn before it is given up; matches the queue's maxReceiveCount. */
export const DEFAULT_TURN_MAX_RECEIVES = 3;
/** How long the Lambda handlers reuse the credentials secret before fetching it again. */
export const DEFAULT_SECRET_CACHE_MS = 300_000;

/**
 * Bytes of turn events one process keeps in memory for live followers (`LIVE_EVENTS_MAX_BYTES`),
 * all turns together, as `eventBytes` estimates them; the oldest turn is dropped first. 64 MiB of a 1,024 MB function.
 */
export const DEFAULT_LIVE_EVENTS_MAX_BYTES = 64 * 1024 * 1024;

const positiveInt = z.coerce.number().int().positive();
const cacheTtl = z.enum(["5m", "1h"]);
const margin = z.coerce.number().min(0).max(4);
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

const roleList = z.array(z.string().min(1));
/** Roles of the principals of one Slack workspace or Teams tenant (`SLACK_ROLES`, `TEAMS_ROLES`). */
const tenantRolesSchema = z.strictObject({
  /** Every principal of the tenant. */
  default: roleList.optional(),
  /** By user: a Slack user id (`U…`, `W…`), an Entra object id. */
  users: z.record(z.string().min(1), roleList).optional(),
  /** By group the user is a member of: a Slack user group id (`S…`), an Entra group object id. Looked up when a turn runs. */
  groups: z.record(z.string().min(1), roleList).optional(),
});
/** Keyed by Slack team id or Entra tenant id; a workspace or tenant not listed has no roles. */
const channelRolesSchema = z.record(z.string().min(1), tenantRolesSchema);
/**
 * A Teams tenant's entry also names its guests' roles: `guest`, for users its directory calls guests
 * (Entra `userType` "Guest", B2B users of other organisations), who get it instead of `default` and
 * `groups` (see docs/security.md). Slack has no such key: a Slack Connect guest is a user of their own team.
 */
const teamsTenantRolesSchema = tenantRolesSchema.extend({ guest: roleList.optional() });
const teamsRolesSchema = z.record(z.string().min(1), teamsTenantRolesSchema);

export type TenantRoles = z.infer<typeof teamsTenantRolesSchema>;
export type ChannelRolesMap = z.infer<typeof teamsRolesSchema>;

/** `SLACK_ROLES` or `TEAMS_ROLES` (named by `name` in its error, which picks the schema: only Teams has `guest`), validated; unset is no roles. */
export function parseChannelRoles(raw: string | undefined, name: string): ChannelRolesMap {
  if (raw === undefined) return {};
  const teams = name === "TEAMS_ROLES";
  const parsed = (teams ? teamsRolesSchema : channelRolesSchema).safeParse(parseJsonSetting(raw, name));
  if (!parsed.success) {
    const [first] = issueDetails(parsed.error);
    const guestKey = teams ? ', "guest": [..]' : "";
    throw new ValidationError("invalid configuration", [
      {
        path: [name, first?.path].filter(Boolean).join("."),
        message: `${first?.message}; expected {"<tenant>": {"default": [..], "users": {"<id>": [..]}, "groups": {"<id>": [..]}${guestKey}}}`,
      },
    ]);
  }
  return parsed.data;
}

/** Every setting of `loadConfig`, defined once; `npm run docs:config` writes docs/configuration.md's table from them. */
export const SETTINGS = {
  MONGODB_URI: setting({ schema: z.string().min(1), defaultText: "embedded server", description: "a real MongoDB instead of the embedded one" }),
  MONGODB_DB: setting({ schema: z.string().min(1), default: DEFAULT_DB_NAME, description: "database name" }),
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
  BEDROCK_COUNT_TOKENS: setting({
    schema: z.enum(["true", "false"]),
    default: "false",
    description: "count a container's first request with Bedrock's CountTokens (not every model has it)",
  }),
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
  MODEL_PRICES: setting({
    schema: modelPrices,
    defaultText: "Claude Sonnet 4 and 4.5",
    description: 'JSON `{"<model id>": {input, output, cacheRead, cacheWrite, cacheWrite1h}}`, USD per million tokens, over the defaults',
  }),
  SYSTEM_PROMPT: setting({ schema: z.string().min(1), defaultText: "built in", description: "the system prompt" }),
  MAX_MESSAGE_CHARS: setting({ schema: positiveInt, default: DEFAULT_MAX_MESSAGE_CHARS, description: "longest user message" }),
  JWT_ISSUER: setting({ schema: z.string().min(1), defaultText: "local keys", description: "who signs API tokens" }),
  JWT_AUDIENCE: setting({ schema: z.string().min(1), default: DEFAULT_JWT_AUDIENCE, description: "audience of API tokens" }),
  JWT_JWKS_URL: setting({ schema: z.string().url(), defaultText: "local keys", description: "the keys that sign API tokens" }),
  JWT_TENANT_CLAIM: setting({ schema: z.string().min(1), default: "tenant", description: "claim naming the caller's tenant" }),
  JWT_REQUIRE_TENANT: setting({
    schema: z.enum(["true", "false"]),
    default: "false",
    defaultText: "`false`; `true` in a stack whose Cognito pool issues the tokens",
    description:
      "refuse (401) an API token without the tenant claim, so every API caller is inside a tenant's limits and admin " +
      "(a Cognito access token carries no tenant)",
  }),
  JWT_ROLES_CLAIM: setting({ schema: z.string().min(1), default: "roles", description: "claim naming the caller's roles" }),
  PORT: setting({ schema: positiveInt.max(65_535), default: DEFAULT_PORT, description: "local server port" }),
  APPROVAL_SWEEP_SECONDS: setting({
    schema: durationSeconds,
    default: DEFAULT_APPROVAL_SWEEP_SECONDS,
    description:
      "local server: how often it rejects as expired the approvals past their deadline and resumes their turns " +
      "(in AWS the worker's schedule does it every 5 minutes; [approvals.md](approvals.md))",
  }),
  TURN_RECOVERY_SWEEP_SECONDS: setting({
    schema: durationSeconds,
    default: DEFAULT_TURN_RECOVERY_SWEEP_SECONDS,
    description:
      "local server: how often it finishes or resumes the turns whose process died (a lapsed lease); a crashed " +
      "holder's conversation takes a new message within LEASE_TTL_MS plus this (in AWS the worker's schedule runs " +
      "every minute; [recovery.md](recovery.md))",
  }),
  MONGODB_SERVER_SELECTION_TIMEOUT_MS: setting({
    schema: durationMs,
    default: DEFAULT_SERVER_SELECTION_TIMEOUT_MS,
    description: "how long an operation waits for a reachable MongoDB before the request answers 503",
  }),
  MONGODB_SOCKET_TIMEOUT_MS: setting({
    schema: durationMs,
    default: DEFAULT_SOCKET_TIMEOUT_MS,
    description: "how long an operation waits for an answer on an open connection before the request answers 503 (the setup function: its timeout)",
  }),
  MONGODB_MAX_POOL_SIZE: setting({
    schema: positiveInt,
    defaultText: "the driver's 100; set per function by the stack",
    description: "most pooled connections per server",
  }),
  MONGODB_MAX_IDLE_TIME_MS: setting({
    schema: durationMs,
    defaultText: "none; 60000 in the stack",
    description: "a pooled connection idle this long is closed rather than reused",
  }),
  LEASE_TTL_MS: setting({
    schema: durationMs,
    default: DEFAULT_LEASE_TTL_MS,
    description: "a turn's lease on its conversation, renewed by a heartbeat every third of it while the turn works",
  }),
  CHECKPOINTS_KEPT: setting({ schema: positiveInt, default: DEFAULT_CHECKPOINTS_KEPT, description: "checkpoints kept per thread after each turn" }),
  RETENTION_DAYS: setting({ schema: positiveInt, default: DEFAULT_RETENTION_DAYS, description: "days of inactivity before a conversation expires everywhere" }),
  SYNC_TURN_DEADLINE_MS: setting({
    schema: durationMs,
    default: DEFAULT_SYNC_TURN_DEADLINE_MS,
    description:
      "how long an API turn runs in the request before it is handed to the worker (202): no model call or tool run starts after it, " +
      "and one under way finishes and is used",
  }),
  SYNC_TURN_MAX_MS: setting({
    schema: durationMs,
    defaultText: "none (28000 in AWS, set by the stack)",
    description:
      "the longest an API request may run a turn, for an API that cuts longer responses (API Gateway's 30 s): past it a model call " +
      "under way is aborted after all, and the worker makes it again",
  }),
  LIVE_EVENTS_MAX_BYTES: setting({
    schema: positiveInt,
    default: DEFAULT_LIVE_EVENTS_MAX_BYTES,
    description:
      "bytes of turn events (text deltas included) one process keeps for its live followers, all turns together; " +
      "the oldest turns go first, and their followers read the stored events",
  }),
  TURN_MAX_RECEIVES: setting({
    schema: positiveInt,
    default: DEFAULT_TURN_MAX_RECEIVES,
    description: "worker receives before a failing turn is given up and the user told",
  }),
  SECRET_CACHE_MS: setting({ schema: positiveInt, default: DEFAULT_SECRET_CACHE_MS, description: "how long the fetched secrets are reused" }),
  TURN_QUEUE_URL: setting({ schema: z.string().url(), defaultText: "set by the stack", description: "the SQS FIFO turn queue" }),
  STREAMING_URL: setting({
    schema: z.string().url(),
    defaultText: "set by the stack",
    description: "the streaming function's URL, named by the HTTP API's 406 to a client that asks it for an event stream",
  }),
  MONGODB_REQUIRE_TLS: setting({
    schema: z.enum(["true", "false"]),
    default: "false",
    defaultText: "`false`; `true` in the stack",
    description: "refuse a MongoDB URI without TLS",
  }),
  SLACK_API_URL: setting({
    schema: z.string().url(),
    defaultText: "`https://slack.com/api/`",
    description: "Slack Web API base URL; tests and local tries point it at a stand-in",
  }),
  TEAMS_OPENID_METADATA_URL: setting({
    schema: z.string().url(),
    defaultText: "the Bot Framework's",
    description: "OpenID metadata naming the keys that sign Bot Framework requests",
  }),
  TEAMS_TOKEN_URL: setting({
    schema: z.string().url(),
    defaultText: "`https://login.microsoftonline.com/{tenant}/oauth2/v2.0/token`",
    description: "client-credentials token endpoint for Bot Connector replies",
  }),
  TEAMS_SERVICE_URL_ORIGIN: setting({
    schema: z.string().url(),
    defaultText: "Teams' Bot Connector hosts (`DEFAULT_TEAMS_SERVICE_HOSTS`)",
    description:
      "the only origin an activity's `serviceUrl` may name instead of Teams' own; tests and local tries set a stand-in's " +
      "([security.md](security.md#trust-boundaries-and-the-tests-that-hold-them))",
  }),
  TEAMS_GRAPH_URL: setting({
    schema: z.string().url(),
    defaultText: "`https://graph.microsoft.com/v1.0/`",
    description: "Microsoft Graph, for the Entra group memberships and guest checks of `TEAMS_ROLES`",
  }),
  SLACK_ROLES: setting({
    schema: z.string().min(1),
    defaultText: "unset (Slack users have no roles)",
    description:
      'JSON roles of Slack users by workspace: `{"T0123": {"default": ["viewer"], "users": {"U0ALICE": ' +
      '["analyst"]}, "groups": {"S0FIN": ["analyst"]}}}` (see [Security](how-it-works.md#security))',
  }),
  TEAMS_ROLES: setting({
    schema: z.string().min(1),
    defaultText: "unset (Teams users have no roles)",
    description:
      "the same by Entra tenant id, with Entra object ids under `users` and Entra group ids under `groups`; `guest` names the roles of the " +
      "tenant's guests (Entra `userType` Guest), who get none of `default` and `groups` " +
      "([security.md](security.md#teams-guests-from-other-organisations))",
  }),
};

/** The credentials secrets' ARNs, one variable per secret, set by the stack on the functions that read each. */
export const SECRET_ARN_SETTINGS: Settings = Object.fromEntries(
  CREDENTIAL_SECRET_NAMES.map((name) => [
    CREDENTIAL_SECRETS[name].variable,
    setting({
      schema: z.string().startsWith("arn:"),
      defaultText: "set by the stack",
      description: `ARN of the \`${CREDENTIAL_SECRETS[name].name}\` credentials secret`,
    }),
  ]),
);

const envSchema = envSchemaOf(SETTINGS)
  .refine((e) => e.MODEL_PROVIDER !== "openai-compatible" || e.OPENAI_BASE_URL !== undefined, {
    path: ["OPENAI_BASE_URL"],
    message: "required with MODEL_PROVIDER=openai-compatible (e.g. http://127.0.0.1:11434/v1)",
  })
  .refine((e) => e.MODEL_PROVIDER !== "openai-compatible" || e.OPENAI_MODEL !== undefined, {
    path: ["OPENAI_MODEL"],
    message: "required with MODEL_PROVIDER=openai-compatible (the model name the server knows)",
  })
  // Bedrock rejects a 1-hour cache point after a 5-minute one, and the stable points come first.
  .refine((e) => !((e.PROMPT_CACHE_STABLE_TTL ?? DEFAULT_PROMPT_CACHE_TTL) === "5m" && e.PROMPT_CACHE_TURN_TTL === "1h"), {
    path: ["PROMPT_CACHE_TURN_TTL"],
    message: "must not be longer than PROMPT_CACHE_STABLE_TTL",
  });
const secretArnSchema = envSchemaOf(SECRET_ARN_SETTINGS);

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
  finishedTurns: number;
  /** Default: `DEFAULT_VIEW_HISTORY_BLOCK_TURNS`. */
  historyBlockTurns: number;
  toolOutputTokens: number;
  /** In the model's tokens. */
  totalBudget: number;
  /** The token estimate's safety margin before any usage is seen, and its floor. Defaults: `DEFAULT_VIEW_TOKEN_MARGIN`, `DEFAULT_VIEW_TOKEN_MARGIN_MIN`. */
  tokenMargin: { initial: number; min: number };
  promptCache: PromptCacheConfig;
  systemPrompt?: string;
}

export interface AuthConfig {
  /** Unset in local mode: the local server signs and verifies with its own key pair. */
  issuer?: string;
  audience: string;
  jwksUrl?: string;
  tenantClaim: string;
  rolesClaim: string;
  /** `JWT_REQUIRE_TENANT`: a token without the tenant claim is refused. Default: false. */
  requireTenant: boolean;
  /** Roles of Slack and Teams users, by workspace or tenant (API callers' roles come from their tokens). */
  channelRoles: { slack: ChannelRolesMap; teams: ChannelRolesMap };
}

/** Set by the CDK stack for the Lambda handlers; unused in local mode. */
export interface DeploymentConfig {
  /** The credentials secrets this function is granted, by name (`lib/config/credentials.ts`); each holds JSON. */
  secretArns: Partial<Record<CredentialSecretName, string>>;
  /** SQS FIFO queue of turns for the worker; without it every API turn runs in the request. */
  turnQueueUrl?: string;
  /** The streaming function's URL (docs/streaming.md), where the HTTP API sends a client that asks it for an event stream. */
  streamingUrl?: string;
  turnMaxReceives: number;
  syncTurnDeadlineMs: number;
  /** `SYNC_TURN_MAX_MS`. Default: none (a model call under way at the deadline always finishes). */
  syncTurnMaxMs?: number;
  /** Bytes of turn events one process keeps for its live followers. Default: 64 MiB (`DEFAULT_LIVE_EVENTS_MAX_BYTES`). */
  liveEventsMaxBytes: number;
  secretCacheMs: number;
  /** Refuse a MongoDB URI that does not use TLS (set in AWS, where the database is across a network). */
  mongodbRequireTls: boolean;
}

/**
 * Where the channels' services are, when not at Slack and Microsoft: tests and local tries point
 * them at local stand-ins. Channel secrets are credentials (`lib/config/credentials.ts`), not here.
 */
export interface ChannelEndpointsConfig {
  /** Slack Web API base URL. Default: `https://slack.com/api/` (`DEFAULT_SLACK_API_URL`). */
  slackApiUrl?: string;
  /** OpenID metadata naming the keys that sign Bot Framework requests. Default: the Bot Framework's (`DEFAULT_BOT_FRAMEWORK_OPENID_METADATA_URL`). */
  teamsOpenIdMetadataUrl?: string;
  /** Client-credentials token URL; `{tenant}` is replaced. Default: Entra's (`DEFAULT_BOT_CONNECTOR_TOKEN_URL`). */
  teamsTokenUrl?: string;
  /** Microsoft Graph base URL, for Entra group roles. Default: `https://graph.microsoft.com/v1.0/` (`DEFAULT_GRAPH_URL`). */
  teamsGraphUrl?: string;
  /** The origin of a stand-in Bot Connector, the only one a `serviceUrl` may then name. Default: Teams' hosts (`DEFAULT_TEAMS_SERVICE_HOSTS`). */
  teamsServiceUrlOrigin?: string;
}

/** How the MongoClient is sized and how long it waits (`lib/store/mongo-client.ts` has the defaults). */
export interface MongoClientConfig {
  /** How long an operation waits for a reachable server. Default: 5,000 ms (`DEFAULT_SERVER_SELECTION_TIMEOUT_MS`). */
  serverSelectionTimeoutMs?: number;
  /** How long an operation waits for an answer on an open connection. Default: 5,000 ms (`DEFAULT_SOCKET_TIMEOUT_MS`). */
  socketTimeoutMs?: number;
  /** Most connections to one server. Default: the driver's 100 (the stack sets a small pool per function). */
  maxPoolSize?: number;
  /** A connection idle this long is closed instead of reused. Default: none (the stack sets 60 s, `DEFAULT_LAMBDA_MAX_IDLE_TIME_MS`). */
  maxIdleTimeMs?: number;
}

export interface Config {
  mongodbUri?: string;
  dbName: string;
  mongo: MongoClientConfig;
  /** How long a turn's lease on its conversation lasts unless renewed. Default: 120,000 ms (`DEFAULT_LEASE_TTL_MS`). */
  leaseTtlMs?: number;
  /** Days of inactivity before a conversation expires from every collection. Default: 90 (`DEFAULT_RETENTION_DAYS`). */
  retentionDays?: number;
  /** Checkpoints kept per thread after each turn. Default: 3 (`DEFAULT_CHECKPOINTS_KEPT`). */
  checkpointsKept?: number;
  model: ModelConfig;
  view: ViewConfig;
  auth: AuthConfig;
  maxMessageChars: number;
  port: number;
  /** Local server: seconds between approval sweeps (`APPROVAL_SWEEP_SECONDS`). */
  approvalSweepSeconds: number;
  /** Local server: seconds between turn recovery sweeps (`TURN_RECOVERY_SWEEP_SECONDS`). */
  turnRecoverySweepSeconds: number;
  /** Which engines the tools use, their limits and permissions (`lib/config/tools-config.ts`). */
  tools: ToolsConfig;
  /** `search_conversation`: embeddings and answer size (`lib/config/recall-config.ts`). */
  recall: RecallConfig;
  /** Budgets and rate limits per tenant and user (`lib/config/limits-config.ts`, docs/limits.md). */
  limits: LimitsConfig;
  /** Erasure, export and the audit log (`lib/config/lifecycle-config.ts`, docs/data-lifecycle.md). */
  lifecycle: LifecycleConfig;
  /** Per-user OAuth for MCP servers (`lib/config/mcp-oauth-config.ts`, docs/mcp-oauth.md). */
  mcpOAuth: McpOAuthConfig;
  /** Contents encrypted at rest per tenant (`lib/config/encryption-config.ts`, docs/security.md). */
  encryption: EncryptionConfig;
  /** MCP servers whose tools turns may call (`lib/config/mcp-servers-config.ts`, docs/mcp.md). */
  mcp: McpConfig;
  channels: ChannelEndpointsConfig;
  deployment: DeploymentConfig;
  /** Local mode: where the OpenTelemetry spans go (`lib/config/tracing-config.ts`, docs/operations.md "Tracing"). */
  tracing: TracingConfig;
}

/** Reads and validates configuration; the only place in `lib/` that looks at the environment. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const e = withDefaults(SETTINGS, parseOrThrow(envSchema, env, "invalid configuration"));
  const arns = parseOrThrow(secretArnSchema, env, "invalid configuration");
  return {
    mongodbUri: e.MONGODB_URI,
    dbName: e.MONGODB_DB,
    mongo: {
      serverSelectionTimeoutMs: e.MONGODB_SERVER_SELECTION_TIMEOUT_MS,
      socketTimeoutMs: e.MONGODB_SOCKET_TIMEOUT_MS,
      maxPoolSize: e.MONGODB_MAX_POOL_SIZE,
      maxIdleTimeMs: e.MONGODB_MAX_IDLE_TIME_MS,
    },
    leaseTtlMs: e.LEASE_TTL_MS,
    retentionDays: e.RETENTION_DAYS,
    checkpointsKept: e.CHECKPOINTS_KEPT,
    model: {
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
    },
    view: {
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
    },
    auth: {
      issuer: e.JWT_ISSUER,
      audience: e.JWT_AUDIENCE,
      jwksUrl: e.JWT_JWKS_URL,
      tenantClaim: e.JWT_TENANT_CLAIM,
      rolesClaim: e.JWT_ROLES_CLAIM,
      requireTenant: e.JWT_REQUIRE_TENANT === "true",
      channelRoles: { slack: parseChannelRoles(e.SLACK_ROLES, "SLACK_ROLES"), teams: parseChannelRoles(e.TEAMS_ROLES, "TEAMS_ROLES") },
    },
    maxMessageChars: e.MAX_MESSAGE_CHARS,
    port: e.PORT,
    approvalSweepSeconds: e.APPROVAL_SWEEP_SECONDS,
    turnRecoverySweepSeconds: e.TURN_RECOVERY_SWEEP_SECONDS,
    tools: loadToolsConfig(env),
    recall: loadRecallConfig(env),
    limits: loadLimitsConfig(env),
    lifecycle: loadLifecycleConfig(env),
    mcpOAuth: loadMcpOAuthConfig(env),
    encryption: loadEncryptionConfig(env),
    mcp: loadMcpConfig(env),
    tracing: loadTracingConfig(env),
    channels: {
      slackApiUrl: e.SLACK_API_URL,
      teamsOpenIdMetadataUrl: e.TEAMS_OPENID_METADATA_URL,
      teamsTokenUrl: e.TEAMS_TOKEN_URL,
      teamsGraphUrl: e.TEAMS_GRAPH_URL,
      teamsServiceUrlOrigin: e.TEAMS_SERVICE_URL_ORIGIN === undefined ? undefined : new URL(e.TEAMS_SERVICE_URL_ORIGIN).origin,
    },
    deployment: {
      secretArns: Object.fromEntries(
        CREDENTIAL_SECRET_NAMES.flatMap((name) => {
          const arn = (arns as Record<string, unknown>)[CREDENTIAL_SECRETS[name].variable];
          return typeof arn === "string" ? [[name, arn]] : [];
        }),
      ),
      turnQueueUrl: e.TURN_QUEUE_URL,
      streamingUrl: e.STREAMING_URL,
      turnMaxReceives: e.TURN_MAX_RECEIVES,
      syncTurnDeadlineMs: e.SYNC_TURN_DEADLINE_MS,
      ...(e.SYNC_TURN_MAX_MS !== undefined && { syncTurnMaxMs: e.SYNC_TURN_MAX_MS }),
      liveEventsMaxBytes: e.LIVE_EVENTS_MAX_BYTES,
      secretCacheMs: e.SECRET_CACHE_MS,
      mongodbRequireTls: e.MONGODB_REQUIRE_TLS === "true",
    },
  };
}
