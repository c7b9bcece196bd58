import { z } from "zod";
import { ValidationError } from "../errors.js";
import { parseJsonSetting, parseOrThrow } from "../validation.js";
import { DEFAULT_APPROVAL_TTL_SECONDS, parseApprovalsConfig, type ApprovalsConfig } from "./approvals-config.js";
import { durationMs, envSchemaOf, optionalVariable, setting, withDefaults } from "./settings.js";

/** Longest a single tool call may run before it comes back to the model as a timeout error. */
export const DEFAULT_TOOL_TIMEOUT_MS = 20_000;
/** Most rows a SQL result returns; the table says when it was truncated. */
export const DEFAULT_SQL_MAX_ROWS = 200;
/** Most bytes of values a SQL result holds; rows past it are cut off as rows past the row limit are. */
export const DEFAULT_SQL_MAX_RESULT_BYTES = 1_000_000;
/** Longest a SQL query may run, in milliseconds (the local engine is terminated, Athena's query stopped). */
export const DEFAULT_SQL_TIMEOUT_MS = 10_000;
/** Passages returned by one document search. */
export const DEFAULT_DOCUMENT_RESULTS = 5;
/** The document metadata key listing the tenants a document is open to (`issuer:tenant`, or `*` for every tenant). */
export const DEFAULT_DOCUMENT_TENANTS_KEY = "allowed_tenants";
/** The document metadata key listing the groups (roles) a document is open to (`*` for everyone of an allowed tenant). */
export const DEFAULT_DOCUMENT_GROUPS_KEY = "allowed_groups";
/** Lifetime of an idempotency record for a tool side effect, in seconds (a day covers every retry path). */
export const DEFAULT_TOOL_IDEMPOTENCY_TTL_SECONDS = 86_400;
/** Power BI REST API base URL. */
export const DEFAULT_POWERBI_API_URL = "https://api.powerbi.com/v1.0/myorg";
/** Microsoft Entra ID authority base URL. */
export const DEFAULT_POWERBI_LOGIN_URL = "https://login.microsoftonline.com";
/** Name of the secret holding the Entra ID application (client) id. */
export const DEFAULT_POWERBI_CLIENT_ID_SECRET = "powerBiClientId";
/** Name of the secret holding the Entra ID client secret. */
export const DEFAULT_POWERBI_CLIENT_SECRET_SECRET = "powerBiClientSecret";
/** AWS region of Athena and the knowledge base when neither `BEDROCK_KB_REGION` nor `AWS_REGION` is set. */
export const DEFAULT_TOOLS_REGION = "us-east-1";
/** Athena data catalog. */
export const DEFAULT_ATHENA_CATALOG = "AwsDataCatalog";

/**
 * Every tool the product has, whether or not a deployment offers it: the names `TOOL_ROLES` may
 * use (test/tools/create-default-tools.test.ts checks them against the tools).
 */
export const TOOL_NAMES = ["sql_query", "search_documents", "query_semantic_model", "create_follow_up", "read_tool_output"] as const;

const positiveInt = z.coerce.number().int().positive();

/** `{"tool_name": ["role", ...]}`: a tool absent from the map is open to every caller. */
const toolRolesSchema = z.record(z.string().min(1), z.array(z.string().min(1)));

/** The tools' settings, defined once (see `settings.ts`); the configuration table of docs/configuration.md lists them. */
export const TOOL_SETTINGS = {
  SQL_ENGINE: setting({
    schema: z.enum(["sqlite", "athena", "none"]),
    default: "sqlite",
    description: "`sqlite` (local mode), `athena`, or `none` (no `sql_query`; what the stack sets without Athena context)",
  }),
  ATHENA_WORKGROUP: setting({ schema: z.string().min(1), description: "required with `athena`" }),
  ATHENA_DATABASE: setting({ schema: z.string().min(1), description: "required with `athena`" }),
  ATHENA_CATALOG: setting({ schema: z.string().min(1), default: DEFAULT_ATHENA_CATALOG, description: "Athena data catalog" }),
  ATHENA_OUTPUT_LOCATION: setting({
    schema: z.string().regex(/^s3:\/\//, "must be an s3:// URI"),
    defaultText: "the workgroup's setting",
    description: "`s3://…` where Athena writes query results",
  }),
  ATHENA_ACCESS: setting({
    schema: z.string().min(1),
    defaultText: "unset (every query under the function's own role)",
    description:
      'JSON list of `{"role", "roleArn", "workgroup"?}`: a caller\'s queries run under the IAM role of the first entry naming one of their roles ' +
      "(or `*`), assumed with session tags naming them, in that workgroup; a caller no entry names is refused " +
      "([security.md](security.md#data-sources-see-the-user))",
  }),
  ATHENA_SCHEMA_DESCRIPTION: setting({ schema: z.string().min(1), defaultText: "the sample schema", description: "tables and columns as told to the model" }),
  SQL_ROW_POLICY: setting({
    schema: z.string().min(1),
    defaultText: "unset (every caller reads every row)",
    description:
      'with `sqlite`, JSON map of role (or `*`, every caller) to the regions whose rows it reads, e.g. `{"*":["North"],"analyst":"*"}`; ' +
      "a caller reads the union of their roles' regions, and one given none is refused ([security.md](security.md#data-sources-see-the-user))",
  }),
  DOCUMENTS_ENGINE: setting({
    schema: z.enum(["local", "bedrock-kb", "none"]),
    default: "local",
    description: "`local` (local mode), `bedrock-kb`, or `none` (no `search_documents`; what the stack sets without a knowledge base)",
  }),
  BEDROCK_KB_ID: setting({ schema: z.string().min(1), description: "required with `bedrock-kb`" }),
  BEDROCK_KB_REGION: setting({ schema: z.string().min(1), defaultText: "`AWS_REGION`, else `us-east-1`", description: "region of the knowledge base" }),
  POWERBI_TENANT_ID: setting({ schema: z.string().min(1), description: "with the group and dataset ids, turns on `query_semantic_model`" }),
  POWERBI_GROUP_ID: setting({ schema: z.string().min(1), description: "the Power BI workspace (group) id" }),
  POWERBI_DATASET_ID: setting({ schema: z.string().min(1), description: "the semantic model (dataset) id" }),
  POWERBI_API_URL: setting({ schema: z.string().url(), default: DEFAULT_POWERBI_API_URL, description: "Power BI REST API base URL" }),
  POWERBI_LOGIN_URL: setting({ schema: z.string().url(), default: DEFAULT_POWERBI_LOGIN_URL, description: "Entra ID authority base URL" }),
  POWERBI_CLIENT_ID_SECRET: setting({
    schema: z.string().min(1),
    default: DEFAULT_POWERBI_CLIENT_ID_SECRET,
    description: "name of the secret holding the app's client id",
  }),
  POWERBI_CLIENT_SECRET_SECRET: setting({
    schema: z.string().min(1),
    default: DEFAULT_POWERBI_CLIENT_SECRET_SECRET,
    description: "name of the secret holding the app's client secret",
  }),
  POWERBI_IDENTITY_MAP: setting({
    schema: z.string().min(1),
    defaultText: "unset (only the workspace tenant's own Teams and API users)",
    description:
      'JSON map of `issuer:tenant:subject` to the Power BI user (UPN) a caller is queried as, e.g. `{"slack:T0ACME:U012AB":"alice@acme.com"}`; ' +
      "Slack users need an entry, and a caller without one who is not a Teams or API user of `POWERBI_TENANT_ID` is refused " +
      "([security.md](security.md#data-sources-see-the-user))",
  }),
  POWERBI_MODEL_DESCRIPTION: setting({ schema: z.string().min(1), description: "tables and measures of the semantic model as told to the model" }),
  FOLLOW_UP_WEBHOOK_URL: setting({
    schema: z.string().url(),
    defaultText: "unset (recorded, not posted)",
    description: "where follow-ups are posted (JSON, with an `Idempotency-Key` header)",
  }),
  TOOL_TIMEOUT_MS: setting({ schema: durationMs, default: DEFAULT_TOOL_TIMEOUT_MS, description: "longest one tool call may run" }),
  SQL_MAX_ROWS: setting({
    schema: positiveInt,
    default: DEFAULT_SQL_MAX_ROWS,
    description: "most rows a SQL result (and a DAX result of `query_semantic_model`) returns",
  }),
  SQL_MAX_RESULT_BYTES: setting({
    schema: positiveInt,
    default: DEFAULT_SQL_MAX_RESULT_BYTES,
    description: "bytes of values (text and blobs by length, other values 8; a missing or null DAX cell 8) a SQL or DAX result holds",
  }),
  SQL_TIMEOUT_MS: setting({ schema: durationMs, default: DEFAULT_SQL_TIMEOUT_MS, description: "longest a SQL query may run" }),
  DOCUMENTS_TENANTS_KEY: setting({
    schema: z.string().min(1),
    default: DEFAULT_DOCUMENT_TENANTS_KEY,
    description:
      "document metadata key listing the tenants (`issuer:tenant`, or `*`) a document is open to; `search_documents` finds a document " +
      "only when it lists `*` or the caller's tenant ([security.md](security.md#data-sources-see-the-user))",
  }),
  DOCUMENTS_GROUPS_KEY: setting({
    schema: z.string().min(1),
    default: DEFAULT_DOCUMENT_GROUPS_KEY,
    description: "document metadata key listing the groups (roles, or `*`) a document is open to; the caller needs one of them",
  }),
  DOCUMENT_RESULTS: setting({
    schema: positiveInt.max(50),
    default: DEFAULT_DOCUMENT_RESULTS,
    description: "passages one document search returns (at most 50)",
  }),
  TOOL_IDEMPOTENCY_TTL_SECONDS: setting({
    schema: positiveInt,
    default: DEFAULT_TOOL_IDEMPOTENCY_TTL_SECONDS,
    description: "lifetime of the idempotency record of a tool's side effect",
  }),
  TOOL_ROLES: setting({
    schema: z.string().min(1),
    defaultText: "unset (every tool open)",
    description:
      'JSON map of tool name to allowed roles, e.g. `{"create_follow_up":["analyst"]}`; unlisted tools are open to everyone; ' +
      `a name that is not one of ${TOOL_NAMES.map((name) => `\`${name}\``).join(", ")} stops start-up with a \`ValidationError\` naming it`,
  }),
  TOOL_APPROVALS: setting({
    schema: z.string().min(1),
    defaultText: "unset (no call waits)",
    description:
      "JSON map of tool name to `{require, approvers}`: which calls of a tool that changes things wait for a person, " +
      "and who may decide ([approvals.md](approvals.md))",
  }),
  APPROVAL_TTL_SECONDS: setting({
    schema: positiveInt,
    default: DEFAULT_APPROVAL_TTL_SECONDS,
    description: "how long a waiting call waits before it is rejected as expired",
  }),
};

const envSchema = envSchemaOf(TOOL_SETTINGS).extend({ AWS_REGION: optionalVariable(z.string().min(1)) });

/** `none`: no `sql_query` tool (what the stack sets without Athena, unless the stage keeps the sample tools). */
export type SqlEngineConfig =
  | {
      engine: "sqlite";
      /** Regions per role the local engine filters rows to (`SQL_ROW_POLICY`). Absent: every caller reads every row. */
      rowPolicy?: Record<string, "*" | string[]>;
    }
  | { engine: "none" }
  | {
      engine: "athena";
      workgroup: string;
      database: string;
      catalog: string;
      outputLocation?: string;
      region: string;
      /** Tables and columns as told to the model. Default: the sample sales schema. */
      schemaDescription?: string;
      /** IAM roles (and workgroups) assumed per caller (`ATHENA_ACCESS`). Absent: the function's own role. */
      access?: { role: string; roleArn: string; workgroup?: string }[];
    };

/** `none`: no `search_documents` tool (what the stack sets without a knowledge base, unless the stage keeps the sample tools). */
export type DocumentsConfig = { engine: "local" } | { engine: "none" } | { engine: "bedrock-kb"; knowledgeBaseId: string; region: string };

/** The document metadata keys that say who may read a document (`DOCUMENTS_TENANTS_KEY`, `DOCUMENTS_GROUPS_KEY`). */
export interface DocumentAccessConfig {
  tenantsKey: string;
  groupsKey: string;
}

export interface PowerBiConfig {
  tenantId: string;
  groupId: string;
  datasetId: string;
  apiUrl: string;
  loginUrl: string;
  /** Names looked up in the secret store; the values never appear in configuration. */
  clientIdSecret: string;
  clientSecretSecret: string;
  /** Tables and measures of the semantic model, as told to the model. */
  modelDescription?: string;
  /** `issuer:tenant:subject` → the Power BI user a caller is queried as (`POWERBI_IDENTITY_MAP`). */
  identityMap: Record<string, string>;
}

export interface ToolsConfig {
  sql: SqlEngineConfig & { maxRows: number; maxBytes: number; timeoutMs: number };
  documents: DocumentsConfig & { maxResults: number; access: DocumentAccessConfig };
  /** Absent unless the tenant, group and dataset are configured: the tool is then not offered. */
  powerBi?: PowerBiConfig;
  /** Absent: follow-ups are recorded but not posted. */
  followUpWebhookUrl?: string;
  timeoutMs: number;
  idempotencyTtlSeconds: number;
  /** Roles allowed per tool name; tools not listed are open to every caller. */
  roles: Record<string, string[]>;
  /** Which calls wait for a person's approval, and who may give it (`lib/config/approvals-config.ts`). */
  approvals: ApprovalsConfig;
}

function invalid(path: string, message: string): ValidationError {
  return new ValidationError("invalid configuration", [{ path, message }]);
}

function parseRoles(raw: string | undefined): Record<string, string[]> {
  if (raw === undefined) return {};
  const parsed = toolRolesSchema.safeParse(parseJsonSetting(raw, "TOOL_ROLES"));
  if (!parsed.success) throw invalid("TOOL_ROLES", 'expected {"tool_name": ["role", ...]}');
  // A misspelt name would leave the real tool open to everyone: refuse to start instead.
  const unknown = Object.keys(parsed.data).filter((name) => !(TOOL_NAMES as readonly string[]).includes(name));
  if (unknown.length > 0) {
    throw invalid("TOOL_ROLES", `unknown tool name${unknown.length === 1 ? "" : "s"} ${unknown.join(", ")}; valid names: ${TOOL_NAMES.join(", ")}`);
  }
  return parsed.data;
}

const athenaAccessSchema = z
  .array(
    z.strictObject({
      role: z.string().min(1),
      roleArn: z.string().regex(/^arn:aws[\w-]*:iam::\d{12}:role\/.+$/, "an IAM role ARN"),
      workgroup: z.string().min(1).optional(),
    }),
  )
  .min(1);

function parseAthenaAccess(raw: string | undefined): { role: string; roleArn: string; workgroup?: string }[] | undefined {
  if (raw === undefined) return undefined;
  const parsed = athenaAccessSchema.safeParse(parseJsonSetting(raw, "ATHENA_ACCESS"));
  if (!parsed.success) throw invalid("ATHENA_ACCESS", 'expected [{"role": "...", "roleArn": "arn:aws:iam::123456789012:role/...", "workgroup"?: "..."}, ...]');
  return parsed.data;
}

const rowPolicySchema = z.record(z.string().min(1), z.union([z.literal("*"), z.array(z.string().min(1))]));

function parseRowPolicy(raw: string | undefined): Record<string, "*" | string[]> | undefined {
  if (raw === undefined) return undefined;
  const parsed = rowPolicySchema.safeParse(parseJsonSetting(raw, "SQL_ROW_POLICY"));
  if (!parsed.success) throw invalid("SQL_ROW_POLICY", 'expected {"role": ["Region", ...] or "*"}');
  return parsed.data;
}

const identityMapSchema = z.record(z.string().regex(/^(api|slack|teams):[^:]*:.+$/, "keys are issuer:tenant:subject"), z.string().min(1));

function parseIdentityMap(raw: string | undefined): Record<string, string> {
  if (raw === undefined) return {};
  const parsed = identityMapSchema.safeParse(parseJsonSetting(raw, "POWERBI_IDENTITY_MAP"));
  if (!parsed.success) throw invalid("POWERBI_IDENTITY_MAP", 'expected {"issuer:tenant:subject": "user@domain"}, issuer api, slack or teams');
  return parsed.data;
}

/** Reads and validates the tools' configuration (composed into `loadConfig`). */
export function loadToolsConfig(env: Record<string, string | undefined> = process.env): ToolsConfig {
  const parsed = parseOrThrow(envSchema, env, "invalid configuration");
  const e = { ...parsed, ...withDefaults(TOOL_SETTINGS, parsed) };
  const region = e.AWS_REGION ?? DEFAULT_TOOLS_REGION;

  let sql: SqlEngineConfig = e.SQL_ENGINE === "none" ? { engine: "none" } : { engine: "sqlite", rowPolicy: parseRowPolicy(e.SQL_ROW_POLICY) };
  if (e.SQL_ENGINE === "athena") {
    if (!e.ATHENA_DATABASE) throw invalid("ATHENA_DATABASE", "required when SQL_ENGINE=athena");
    if (!e.ATHENA_WORKGROUP) throw invalid("ATHENA_WORKGROUP", "required when SQL_ENGINE=athena");
    sql = {
      engine: "athena",
      workgroup: e.ATHENA_WORKGROUP,
      database: e.ATHENA_DATABASE,
      catalog: e.ATHENA_CATALOG,
      outputLocation: e.ATHENA_OUTPUT_LOCATION,
      region,
      schemaDescription: e.ATHENA_SCHEMA_DESCRIPTION,
      access: parseAthenaAccess(e.ATHENA_ACCESS),
    };
  }

  let documents: DocumentsConfig = { engine: e.DOCUMENTS_ENGINE === "none" ? "none" : "local" };
  if (e.DOCUMENTS_ENGINE === "bedrock-kb") {
    if (!e.BEDROCK_KB_ID) throw invalid("BEDROCK_KB_ID", "required when DOCUMENTS_ENGINE=bedrock-kb");
    documents = { engine: "bedrock-kb", knowledgeBaseId: e.BEDROCK_KB_ID, region: e.BEDROCK_KB_REGION ?? region };
  }

  const powerBiKeys = [e.POWERBI_TENANT_ID, e.POWERBI_GROUP_ID, e.POWERBI_DATASET_ID];
  const powerBiSet = powerBiKeys.filter((v) => v !== undefined).length;
  if (powerBiSet > 0 && powerBiSet < powerBiKeys.length) {
    throw invalid("POWERBI_TENANT_ID", "POWERBI_TENANT_ID, POWERBI_GROUP_ID and POWERBI_DATASET_ID go together");
  }
  const powerBi: PowerBiConfig | undefined =
    e.POWERBI_TENANT_ID && e.POWERBI_GROUP_ID && e.POWERBI_DATASET_ID
      ? {
          tenantId: e.POWERBI_TENANT_ID,
          groupId: e.POWERBI_GROUP_ID,
          datasetId: e.POWERBI_DATASET_ID,
          apiUrl: e.POWERBI_API_URL,
          loginUrl: e.POWERBI_LOGIN_URL,
          clientIdSecret: e.POWERBI_CLIENT_ID_SECRET,
          clientSecretSecret: e.POWERBI_CLIENT_SECRET_SECRET,
          modelDescription: e.POWERBI_MODEL_DESCRIPTION,
          identityMap: parseIdentityMap(e.POWERBI_IDENTITY_MAP),
        }
      : undefined;

  return {
    sql: {
      ...sql,
      maxRows: e.SQL_MAX_ROWS,
      maxBytes: e.SQL_MAX_RESULT_BYTES,
      timeoutMs: e.SQL_TIMEOUT_MS,
    },
    documents: { ...documents, maxResults: e.DOCUMENT_RESULTS, access: { tenantsKey: e.DOCUMENTS_TENANTS_KEY, groupsKey: e.DOCUMENTS_GROUPS_KEY } },
    powerBi,
    followUpWebhookUrl: e.FOLLOW_UP_WEBHOOK_URL,
    timeoutMs: e.TOOL_TIMEOUT_MS,
    idempotencyTtlSeconds: e.TOOL_IDEMPOTENCY_TTL_SECONDS,
    roles: parseRoles(e.TOOL_ROLES),
    approvals: parseApprovalsConfig(e.TOOL_APPROVALS, e.APPROVAL_TTL_SECONDS, TOOL_NAMES),
  };
}
