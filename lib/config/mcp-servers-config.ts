import { z } from "zod";
import { ValidationError } from "../errors.js";
import { issueDetails, parseJsonSetting, parseOrThrow } from "../validation.js";
import { toolApprovalPolicySchema } from "./approvals-config.js";
import { parseCidr } from "./mcp-ip-ranges.js";
import { envSchemaOf, setting, withDefaults } from "./settings.js";

/** Seconds a container reuses a server's `tools/list`: a tool added or changed on the server is offered within this. */
export const DEFAULT_MCP_TOOLS_TTL_SECONDS = 300;
/** Seconds a container reuses a tenant's server entries read from the database: an admin change applies within this. */
export const DEFAULT_MCP_ENTRIES_CACHE_SECONDS = 30;
/** Most tools one server may list; a server listing more offers none (a list that long is a mistake or an attack on the context). */
export const DEFAULT_MCP_MAX_TOOLS_PER_SERVER = 64;
/** Most bytes of one tool's input JSON Schema; a tool with a larger one is not offered. */
export const DEFAULT_MCP_MAX_SCHEMA_BYTES = 8_192;
/** Longest a call to an MCP tool may run before the model gets a timeout error, in milliseconds. */
export const DEFAULT_MCP_TIMEOUT_MS = 15_000;
/**
 * Most bytes of one MCP tool result kept; the rest is cut off and the model told so. A result over
 * `VIEW_TOOL_OUTPUT_TOKENS` is offloaded to the artifact tier as every tool's, read back with `read_tool_output`.
 */
export const DEFAULT_MCP_MAX_OUTPUT_BYTES = 200_000;
/** Calls in flight to one server from one container; a call past it waits for a free slot within its timeout. */
export const DEFAULT_MCP_MAX_CONCURRENCY = 4;
/** Longest tool description the model sees; a longer one is cut and marked. */
export const DEFAULT_MCP_DESCRIPTION_MAX_CHARS = 1_000;

/**
 * A server's name, the prefix of its tools' names (`<server>__<tool>`): letters, digits and single
 * hyphens, so the namespaced name stays within Bedrock's `^[a-zA-Z0-9_-]{1,64}$` and `__` can only
 * be the separator.
 */
export const MCP_SERVER_NAME_PATTERN = /^[A-Za-z0-9](?:-?[A-Za-z0-9]){0,23}$/;
/** Between the server's name and the tool's in a namespaced tool name. */
export const MCP_TOOL_NAME_SEPARATOR = "__";

const toolName = z.string().min(1).max(64);
const roles = z.array(z.string().min(1)).max(50);

/** Streamable HTTP: what the worker and api Lambdas reach (HTTPS in AWS; VPC egress in docs/mcp.md). */
export const mcpStreamableHttpTransportSchema = z.strictObject({
  kind: z.literal("streamable-http"),
  url: z.url({ protocol: /^https?$/ }),
});

/** A local process speaking MCP over stdin/stdout: local mode only (never bundled into Lambda). */
export const mcpStdioTransportSchema = z.strictObject({
  kind: z.literal("stdio"),
  command: z.string().min(1),
  args: z.array(z.string()).max(100).optional(),
  /** Environment of the process, over a minimal inherited one (the SDK's `getDefaultEnvironment`). */
  env: z.record(z.string(), z.string()).optional(),
});

export const mcpTransportSchema = z.discriminatedUnion("kind", [mcpStreamableHttpTransportSchema, mcpStdioTransportSchema]);

/** No credential: a server open to the network it sits on. */
export const mcpNoAuthSchema = z.strictObject({ kind: z.literal("none") });

/**
 * A secret's name in an entry: one segment. It is read under its owner's prefix only
 * (`mcp/<name>` for `MCP_SERVERS`, `mcp/<issuer>/<tenant>/<name>` for a tenant's entry, lib/mcp/mcp-secrets.ts).
 */
export const MCP_SECRET_NAME_PATTERN = /^[A-Za-z0-9._-]{1,128}$/;
const secretNameSchema = z
  .string()
  .regex(
    MCP_SECRET_NAME_PATTERN,
    "a secret name is one segment of letters, digits, '.', '_' or '-' (at most 128); " +
      "it is read as mcp/<name> for MCP_SERVERS and mcp/<issuer>/<tenant>/<name> for a tenant's entry",
  );

/**
 * The headers a static credential may be sent in (compared case-insensitively): credential headers,
 * never one that changes where or how a request goes (`Host`, `Cookie`, `Forwarded`, …).
 */
export const MCP_CREDENTIAL_HEADERS = ["Authorization", "X-API-Key", "API-Key", "X-Auth-Token", "X-Access-Token", "Private-Token"] as const;
const credentialHeaders = new Set(MCP_CREDENTIAL_HEADERS.map((h) => h.toLowerCase()));

/** Whether `header` is one of {@link MCP_CREDENTIAL_HEADERS}. */
export function isCredentialHeader(header: string): boolean {
  return credentialHeaders.has(header.toLowerCase());
}

/**
 * One credential for the whole server, read from the owner's MCP secrets by `secretName` (docs/mcp.md,
 * "Credentials"), sent on every request as `<header>: <scheme> <secret>`.
 */
export const mcpStaticAuthSchema = z.strictObject({
  kind: z.literal("static"),
  secretName: secretNameSchema,
  /** One of `MCP_CREDENTIAL_HEADERS`. Default: `Authorization`. */
  header: z
    .string()
    .refine(isCredentialHeader, `the credential header is one of ${MCP_CREDENTIAL_HEADERS.join(", ")}`)
    .optional(),
  /** Default: `Bearer`; `""` sends the secret alone. */
  scheme: z
    .string()
    .regex(/^[A-Za-z0-9-]{0,32}$/, "a scheme is a word of letters, digits and '-'")
    .optional(),
});

/**
 * The user's own identity: the MCP authorization flow (protected-resource metadata, authorization
 * code with PKCE), tokens stored per user and server by the `McpOAuthProviderFactory`.
 */
export const mcpOAuthAuthSchema = z.strictObject({
  kind: z.literal("oauth"),
  /** Scopes asked for. Default: what the server's protected-resource metadata names. */
  scopes: z.array(z.string().min(1)).max(50).optional(),
  /** A client registered beforehand with the authorization server. Default: dynamic client registration. */
  clientId: z.string().min(1).optional(),
  /** Name of the secret holding that client's secret, for a confidential client (read as `secretName` is). Default: a public client. */
  clientSecretName: secretNameSchema.optional(),
});

export const mcpAuthSchema = z.discriminatedUnion("kind", [mcpNoAuthSchema, mcpStaticAuthSchema, mcpOAuthAuthSchema]);

/** One MCP server whose tools a tenant's turns may call (`MCP_SERVERS`, or `/v1/admin/mcp-servers`). */
export const mcpServerEntrySchema = z.strictObject({
  name: z.string().max(24).regex(MCP_SERVER_NAME_PATTERN, "letters, digits and single hyphens, at most 24 characters"),
  transport: mcpTransportSchema,
  /** Default: `{ "kind": "none" }`. */
  auth: mcpAuthSchema.optional(),
  /** The server's tool names (as the server names them) offered to the model. Default: every tool the server lists. */
  tools: z.array(toolName).max(200).optional(),
  /** Roles allowed to use any of the server's tools. Default: everyone. */
  allowedRoles: roles.optional(),
  /** Roles per tool (the server's name for it), over `allowedRoles`. */
  roles: z.record(toolName, roles).optional(),
  /**
   * Approval per tool (the server's name for it), over the default from its annotations (a tool
   * not marked `readOnlyHint` waits for the requester). A `destructiveHint` tool waits whatever this says.
   */
  approvals: z.record(toolName, toolApprovalPolicySchema).optional(),
  /** Default: `DEFAULT_MCP_TIMEOUT_MS`. */
  timeoutMs: z.number().int().min(100).max(300_000).optional(),
  /** Default: `DEFAULT_MCP_MAX_OUTPUT_BYTES`. */
  maxOutputBytes: z.number().int().min(256).max(10_000_000).optional(),
  /** Default: `DEFAULT_MCP_MAX_CONCURRENCY`. */
  maxConcurrency: z.number().int().min(1).max(64).optional(),
  /** Default: `DEFAULT_MCP_DESCRIPTION_MAX_CHARS`. */
  descriptionMaxChars: z.number().int().min(16).max(10_000).optional(),
});

/** `MCP_SERVERS`: the entries every tenant gets, unless a tenant's own entry of the same name replaces one. */
export const mcpServerListSchema = z.array(mcpServerEntrySchema).max(50);

export type McpTransport = z.infer<typeof mcpTransportSchema>;
export type McpAuth = z.infer<typeof mcpAuthSchema>;
export type McpOAuthAuth = z.infer<typeof mcpOAuthAuthSchema>;
export type McpStaticAuth = z.infer<typeof mcpStaticAuthSchema>;
export type McpServerEntry = z.infer<typeof mcpServerEntrySchema>;

/** The MCP client's settings, defined once (see `settings.ts`); docs/mcp.md describes them. */
export const MCP_SETTINGS = {
  MCP_SERVERS: setting({
    schema: z.string().min(1),
    defaultText: "none",
    description:
      'JSON list of MCP servers every tenant gets, e.g. `[{"name": "wiki", "transport": {"kind": "streamable-http", "url": "https://…/mcp"}}]` ([MCP](mcp.md))',
  }),
  MCP_LOCAL_SECRETS: setting({
    schema: z.string().min(1),
    defaultText: "none",
    description:
      'local mode: JSON of the MCP credentials by key, `{"mcp/wikiToken": "…", "mcp/api/acme/crmKey": "…"}`: ' +
      "`mcp/<name>` for `MCP_SERVERS`, `mcp/<issuer>/<tenant>/<name>` for a tenant's entries ([MCP](mcp.md#credentials))",
  }),
  MCP_EGRESS_ALLOW: setting({
    schema: z.string(),
    defaultText: "none (local server: loopback)",
    description:
      "comma-separated CIDRs MCP servers and their OAuth endpoints may be reached at although private, loopback, " +
      "link-local or otherwise not public, e.g. `10.20.0.0/16` ([MCP](mcp.md#egress))",
  }),
  MCP_TOOLS_TTL_SECONDS: setting({
    schema: z.coerce.number().int().min(0).max(86_400),
    default: DEFAULT_MCP_TOOLS_TTL_SECONDS,
    description: "how long a container reuses a server's tool list",
  }),
  MCP_ENTRIES_CACHE_SECONDS: setting({
    schema: z.coerce.number().int().min(0).max(60),
    default: DEFAULT_MCP_ENTRIES_CACHE_SECONDS,
    description: "how long a container reuses a tenant's MCP servers set through `/v1/admin/mcp-servers` (at most 60)",
  }),
  MCP_MAX_TOOLS_PER_SERVER: setting({
    schema: z.coerce.number().int().positive().max(1_000),
    default: DEFAULT_MCP_MAX_TOOLS_PER_SERVER,
    description: "a server listing more tools offers none",
  }),
  MCP_MAX_SCHEMA_BYTES: setting({
    schema: z.coerce.number().int().positive().max(1_000_000),
    default: DEFAULT_MCP_MAX_SCHEMA_BYTES,
    description: "a tool whose input schema is larger is not offered",
  }),
};

const envSchema = envSchemaOf(MCP_SETTINGS);

/** The MCP client's configuration (docs/mcp.md). */
export interface McpConfig {
  /** Every tenant's servers, unless the tenant's own entry of the same name replaces one. Default: none. */
  servers: McpServerEntry[];
  /** Local mode's static credentials by secret name (`MCP_LOCAL_SECRETS`). Default: none. */
  localSecrets: Record<string, string>;
  /** Default: `DEFAULT_MCP_TOOLS_TTL_SECONDS`. */
  toolsTtlSeconds: number;
  /** Default: `DEFAULT_MCP_ENTRIES_CACHE_SECONDS`. */
  entriesCacheSeconds: number;
  /** Default: `DEFAULT_MCP_MAX_TOOLS_PER_SERVER`. */
  maxToolsPerServer: number;
  /** Default: `DEFAULT_MCP_MAX_SCHEMA_BYTES`. */
  maxSchemaBytes: number;
  /** Networks reachable although not public (`MCP_EGRESS_ALLOW`), as CIDRs. Default: none. */
  egressAllow: string[];
}

/** Reads `MCP_SERVERS` (JSON) and the MCP limits; names must be unique. */
export function loadMcpConfig(env: Record<string, string | undefined>): McpConfig {
  const e = withDefaults(MCP_SETTINGS, parseOrThrow(envSchema, env, "invalid configuration"));
  return {
    servers: e.MCP_SERVERS === undefined ? [] : parseMcpServers(e.MCP_SERVERS),
    localSecrets:
      e.MCP_LOCAL_SECRETS === undefined
        ? {}
        : parseOrThrow(
            z.record(z.string().startsWith("mcp/", "a key of MCP_LOCAL_SECRETS is mcp/<name> or mcp/<issuer>/<tenant>/<name>"), z.string()),
            parseJsonSetting(e.MCP_LOCAL_SECRETS, "MCP_LOCAL_SECRETS"),
            "invalid configuration",
            "MCP_LOCAL_SECRETS",
          ),
    egressAllow: parseCidrList(e.MCP_EGRESS_ALLOW),
    toolsTtlSeconds: e.MCP_TOOLS_TTL_SECONDS,
    entriesCacheSeconds: e.MCP_ENTRIES_CACHE_SECONDS,
    maxToolsPerServer: e.MCP_MAX_TOOLS_PER_SERVER,
    maxSchemaBytes: e.MCP_MAX_SCHEMA_BYTES,
  };
}

/** `MCP_EGRESS_ALLOW`: CIDRs (`10.0.0.0/8`, `::1/128`) or single addresses, comma-separated; a malformed one is a configuration error. */
function parseCidrList(raw: string | undefined): string[] {
  const items = (raw ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  const bad = items.filter((item) => parseCidr(item) === undefined);
  if (bad.length > 0) {
    throw new ValidationError("invalid configuration", [{ path: "MCP_EGRESS_ALLOW", message: `not a CIDR: ${bad.join(", ")}` }]);
  }
  return items;
}

function parseMcpServers(raw: string): McpServerEntry[] {
  const parsed = mcpServerListSchema.safeParse(parseJsonSetting(raw, "MCP_SERVERS"));
  if (!parsed.success) {
    throw new ValidationError(
      "invalid configuration",
      issueDetails(parsed.error).map((d) => ({ path: `MCP_SERVERS.${d.path}`, message: d.message })),
    );
  }
  const names = parsed.data.map((s) => s.name);
  const repeated = names.filter((n, i) => names.indexOf(n) !== i);
  if (repeated.length > 0) {
    throw new ValidationError("invalid configuration", [
      { path: "MCP_SERVERS", message: `server name${repeated.length === 1 ? "" : "s"} used twice: ${repeated.join(", ")}` },
    ]);
  }
  return parsed.data;
}
