import { loadAuthConfig, AUTH_SETTINGS, type AuthConfig } from "./auth-config.js";
import { CHANNEL_SETTINGS, loadChannelEndpointsConfig, type ChannelEndpointsConfig } from "./channels-config.js";
import { DATABASE_SETTINGS, loadDatabaseConfig, type DatabaseConfig } from "./database-config.js";
import { DEPLOYMENT_SETTINGS, loadDeploymentConfig, type DeploymentConfig } from "./deployment-config.js";
import { loadLifecycleConfig, type LifecycleConfig } from "./lifecycle-config.js";
import { loadLimitsConfig, type LimitsConfig } from "./limits-config.js";
import { loadMcpOAuthConfig, type McpOAuthConfig } from "./mcp-oauth-config.js";
import { loadEncryptionConfig, type EncryptionConfig } from "./encryption-config.js";
import { loadMcpConfig, type McpConfig } from "./mcp-servers-config.js";
import { loadModelConfig, MODEL_SETTINGS, type ModelConfig } from "./model-config.js";
import { loadRecallConfig, type RecallConfig } from "./recall-config.js";
import { loadServerConfig, SERVER_SETTINGS, type ServerConfig } from "./server-config.js";
import { loadToolsConfig, type ToolsConfig } from "./tools-config.js";
import { loadTracingConfig, type TracingConfig } from "./tracing-config.js";
import { loadViewConfig, VIEW_SETTINGS, type ViewConfig } from "./view-config.js";

/**
 * The settings of the areas whose values sit in `Config` itself or in its sub-objects of before
 * (`model`, `view`, `auth`, `channels`, `deployment`), each defined once in its area's file;
 * `npm run docs:config` writes docs/configuration.md's table from these and the other areas' own.
 */
export const SETTINGS = {
  ...DATABASE_SETTINGS,
  ...MODEL_SETTINGS,
  ...VIEW_SETTINGS,
  ...SERVER_SETTINGS,
  ...AUTH_SETTINGS,
  ...DEPLOYMENT_SETTINGS,
  ...CHANNEL_SETTINGS,
};

/** The whole configuration: one part per area, each read and validated by its area's file. */
export interface Config extends DatabaseConfig, ServerConfig {
  /** The chat model (`lib/config/model-config.ts`). */
  model: ModelConfig;
  /** The model view and its prompt cache (`lib/config/view-config.ts`). */
  view: ViewConfig;
  /** API tokens and the channels' roles (`lib/config/auth-config.ts`). */
  auth: AuthConfig;
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
  /** Where the channels' services are (`lib/config/channels-config.ts`). */
  channels: ChannelEndpointsConfig;
  /** What the stack sets for the Lambda handlers (`lib/config/deployment-config.ts`). */
  deployment: DeploymentConfig;
  /** Local mode: where the OpenTelemetry spans go (`lib/config/tracing-config.ts`, docs/operations.md "Tracing"). */
  tracing: TracingConfig;
}

/** Reads and validates configuration; the only place in `lib/` that looks at the environment. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  return {
    ...loadDatabaseConfig(env),
    model: loadModelConfig(env),
    view: loadViewConfig(env),
    auth: loadAuthConfig(env),
    ...loadServerConfig(env),
    tools: loadToolsConfig(env),
    recall: loadRecallConfig(env),
    limits: loadLimitsConfig(env),
    lifecycle: loadLifecycleConfig(env),
    mcpOAuth: loadMcpOAuthConfig(env),
    encryption: loadEncryptionConfig(env),
    mcp: loadMcpConfig(env),
    tracing: loadTracingConfig(env),
    channels: loadChannelEndpointsConfig(env),
    deployment: loadDeploymentConfig(env),
  };
}
