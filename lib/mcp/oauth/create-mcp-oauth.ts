import { KMSClient } from "@aws-sdk/client-kms";
import type { Db } from "mongodb";
import { AuditLog, type AuditEntry } from "../../audit/audit-log.js";
import type { Principal } from "../../auth/principal.js";
import { DEFAULT_RETENTION_DAYS } from "../../config/database-config.js";
import type { Config } from "../../config/config.js";
import type { StructuredLogger } from "../../logger.js";
import type { SecretSource } from "../../tools/secrets.js";
import type { DataKeySource } from "./data-key-source.js";
import { KmsDataKeySource } from "./kms-data-key-source.js";
import { LocalDataKeySource } from "./local-data-key-source.js";
import { McpOAuth } from "./mcp-oauth.js";

const DAY_MS = 86_400_000;

/** The audit entry of a completed MCP sign-in: who signed in at which server, through which channel. */
export function mcpSignInEntry(principal: Principal, server: string): AuditEntry {
  return {
    action: "sign_in.mcp",
    actor: { ...principal },
    tenant: { issuer: principal.issuer, tenant: principal.tenant },
    resource: { server },
    channel: principal.issuer,
  };
}
/** The conversations' retention when the configuration names none (`RETENTION_DAYS`' default). */
const FALLBACK_RETENTION_DAYS = DEFAULT_RETENTION_DAYS;

export interface McpOAuthParts {
  db: Db;
  /** The callback URL when `MCP_OAUTH_REDIRECT_URL` is unset (the local server's own, once it listens). */
  redirectUrl: string | (() => string);
  /** Where the local key file is, when no KMS key is configured (the local server's `.local/`). Default: none (KMS required). */
  localDir?: string;
  /** Default: a client of the function's region. */
  kms?: KMSClient;
  secrets?: SecretSource;
  /** Networks reachable although not public, over `MCP_EGRESS_ALLOW` (the local server: loopback). Default: none. */
  egressAllow?: readonly string[];
  logger?: StructuredLogger;
}

/**
 * Per-user MCP OAuth as the configuration says: KMS data keys when `MCP_OAUTH_KMS_KEY_ID` is set,
 * the local key file otherwise; undefined when neither can be had (a function without a key).
 */
export function createMcpOAuth(config: Config, parts: McpOAuthParts): McpOAuth | undefined {
  const { kmsKeyId, redirectUrl, signInTtlSeconds } = config.mcpOAuth;
  let keys: DataKeySource;
  if (kmsKeyId) keys = new KmsDataKeySource(parts.kms ?? new KMSClient({}), kmsKeyId);
  else if (parts.localDir) keys = new LocalDataKeySource(parts.localDir);
  else return undefined;
  // Each completed sign-in is an audit record of the principal's tenant (docs/data-lifecycle.md); no token, no code.
  const audit = new AuditLog(parts.db, { retentionDays: config.lifecycle.auditRetentionDays, logger: parts.logger });
  return new McpOAuth({
    db: parts.db,
    keys,
    redirectUrl: redirectUrl ?? parts.redirectUrl,
    retentionMs: (config.retentionDays ?? FALLBACK_RETENTION_DAYS) * DAY_MS,
    signInTtlMs: signInTtlSeconds * 1000,
    secrets: parts.secrets,
    egress: { allow: [...config.mcp.egressAllow, ...(parts.egressAllow ?? [])] },
    logger: parts.logger,
    onSignedIn: async ({ principal, server }) => {
      await audit.append(mcpSignInEntry(principal, server));
    },
  });
}
