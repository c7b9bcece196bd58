import { z } from "zod";
import { parseOrThrow } from "../validation.js";
import { durationSeconds, envSchemaOf, setting, withDefaults } from "./settings.js";

/** Seconds a sign-in link to an MCP server works (docs/mcp-oauth.md). */
export const DEFAULT_MCP_OAUTH_SIGN_IN_TTL_SECONDS = 600;
/** The path of the callback on the API, after its base URL. */
export const MCP_OAUTH_CALLBACK_PATH = "/v1/mcp/oauth/callback";

/** Per-user OAuth for MCP servers, defined once (see `settings.ts`). */
export const MCP_OAUTH_SETTINGS = {
  MCP_OAUTH_REDIRECT_URL: setting({
    schema: z.url({ protocol: /^https?$/ }),
    defaultText: "the local server's `/v1/mcp/oauth/callback`",
    description: "the absolute callback URL registered with MCP servers' authorization servers (the API's `/v1/mcp/oauth/callback`)",
  }),
  MCP_OAUTH_KMS_KEY_ID: setting({
    schema: z.string().min(1).max(2048),
    defaultText: "unset (a local key file under `.local/`)",
    description: "the KMS key whose data keys seal users' MCP tokens (AWS); unset, the local server's key file does",
  }),
  MCP_OAUTH_SIGN_IN_TTL_SECONDS: setting({
    schema: durationSeconds,
    default: DEFAULT_MCP_OAUTH_SIGN_IN_TTL_SECONDS,
    description: "seconds a sign-in link to an MCP server works; a later or second use is refused",
  }),
};

const envSchema = envSchemaOf(MCP_OAUTH_SETTINGS);

export interface McpOAuthConfig {
  /** Unset: the local server's own callback on its port. */
  redirectUrl?: string;
  /** Unset: the local key file (local mode only). */
  kmsKeyId?: string;
  /** Default: `DEFAULT_MCP_OAUTH_SIGN_IN_TTL_SECONDS`. */
  signInTtlSeconds: number;
}

export function loadMcpOAuthConfig(env: Record<string, string | undefined>): McpOAuthConfig {
  const e = withDefaults(MCP_OAUTH_SETTINGS, parseOrThrow(envSchema, env, "invalid configuration"));
  return { redirectUrl: e.MCP_OAUTH_REDIRECT_URL, kmsKeyId: e.MCP_OAUTH_KMS_KEY_ID, signInTtlSeconds: e.MCP_OAUTH_SIGN_IN_TTL_SECONDS };
}
