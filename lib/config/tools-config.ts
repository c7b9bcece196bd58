import { z } from "zod";
import { ValidationError } from "../errors.js";
import { parseJsonSetting, parseOrThrow } from "../validation.js";
import { parseApprovalsConfig, type ApprovalsConfig } from "./approvals-config.js";

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

const envSchema = z.object({
  SQL_ENGINE: z.enum(["sqlite", "athena", "none"]).optional(),
  ATHENA_WORKGROUP: z.string().min(1).optional(),
  ATHENA_DATABASE: z.string().min(1).optional(),
  ATHENA_CATALOG: z.string().min(1).optional(),
  ATHENA_OUTPUT_LOCATION: z
    .string()
    .regex(/^s3:\/\//, "must be an s3:// URI")
    .optional(),
  ATHENA_SCHEMA_DESCRIPTION: z.string().min(1).optional(),
  DOCUMENTS_ENGINE: z.enum(["local", "bedrock-kb", "none"]).optional(),
  BEDROCK_KB_ID: z.string().min(1).optional(),
  BEDROCK_KB_REGION: z.string().min(1).optional(),
  AWS_REGION: z.string().min(1).optional(),
  POWERBI_TENANT_ID: z.string().min(1).optional(),
  POWERBI_GROUP_ID: z.string().min(1).optional(),
  POWERBI_DATASET_ID: z.string().min(1).optional(),
  POWERBI_API_URL: z.string().url().optional(),
  POWERBI_LOGIN_URL: z.string().url().optional(),
  POWERBI_CLIENT_ID_SECRET: z.string().min(1).optional(),
  POWERBI_CLIENT_SECRET_SECRET: z.string().min(1).optional(),
  POWERBI_MODEL_DESCRIPTION: z.string().min(1).optional(),
  FOLLOW_UP_WEBHOOK_URL: z.string().url().optional(),
  TOOL_TIMEOUT_MS: positiveInt.optional(),
  SQL_MAX_ROWS: positiveInt.optional(),
  SQL_MAX_RESULT_BYTES: positiveInt.optional(),
  SQL_TIMEOUT_MS: positiveInt.optional(),
  DOCUMENT_RESULTS: positiveInt.max(50).optional(),
  TOOL_IDEMPOTENCY_TTL_SECONDS: positiveInt.optional(),
  TOOL_ROLES: z.string().min(1).optional(),
  TOOL_APPROVALS: z.string().min(1).optional(),
  APPROVAL_TTL_SECONDS: positiveInt.optional(),
});

/** `none`: no `sql_query` tool (what the stack sets without Athena, unless the stage keeps the sample tools). */
export type SqlEngineConfig =
  | { engine: "sqlite" }
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
    };

/** `none`: no `search_documents` tool (what the stack sets without a knowledge base, unless the stage keeps the sample tools). */
export type DocumentsConfig = { engine: "local" } | { engine: "none" } | { engine: "bedrock-kb"; knowledgeBaseId: string; region: string };

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
}

export interface ToolsConfig {
  sql: SqlEngineConfig & { maxRows: number; maxBytes: number; timeoutMs: number };
  documents: DocumentsConfig & { maxResults: number };
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

/** Reads and validates the tools' configuration (composed into `loadConfig`). */
export function loadToolsConfig(env: Record<string, string | undefined> = process.env): ToolsConfig {
  const e = parseOrThrow(envSchema, env, "invalid configuration");
  const region = e.AWS_REGION ?? DEFAULT_TOOLS_REGION;

  let sql: SqlEngineConfig = { engine: e.SQL_ENGINE === "none" ? "none" : "sqlite" };
  if (e.SQL_ENGINE === "athena") {
    if (!e.ATHENA_DATABASE) throw invalid("ATHENA_DATABASE", "required when SQL_ENGINE=athena");
    if (!e.ATHENA_WORKGROUP) throw invalid("ATHENA_WORKGROUP", "required when SQL_ENGINE=athena");
    sql = {
      engine: "athena",
      workgroup: e.ATHENA_WORKGROUP,
      database: e.ATHENA_DATABASE,
      catalog: e.ATHENA_CATALOG ?? DEFAULT_ATHENA_CATALOG,
      outputLocation: e.ATHENA_OUTPUT_LOCATION,
      region,
      schemaDescription: e.ATHENA_SCHEMA_DESCRIPTION,
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
          apiUrl: e.POWERBI_API_URL ?? DEFAULT_POWERBI_API_URL,
          loginUrl: e.POWERBI_LOGIN_URL ?? DEFAULT_POWERBI_LOGIN_URL,
          clientIdSecret: e.POWERBI_CLIENT_ID_SECRET ?? DEFAULT_POWERBI_CLIENT_ID_SECRET,
          clientSecretSecret: e.POWERBI_CLIENT_SECRET_SECRET ?? DEFAULT_POWERBI_CLIENT_SECRET_SECRET,
          modelDescription: e.POWERBI_MODEL_DESCRIPTION,
        }
      : undefined;

  return {
    sql: {
      ...sql,
      maxRows: e.SQL_MAX_ROWS ?? DEFAULT_SQL_MAX_ROWS,
      maxBytes: e.SQL_MAX_RESULT_BYTES ?? DEFAULT_SQL_MAX_RESULT_BYTES,
      timeoutMs: e.SQL_TIMEOUT_MS ?? DEFAULT_SQL_TIMEOUT_MS,
    },
    documents: { ...documents, maxResults: e.DOCUMENT_RESULTS ?? DEFAULT_DOCUMENT_RESULTS },
    powerBi,
    followUpWebhookUrl: e.FOLLOW_UP_WEBHOOK_URL,
    timeoutMs: e.TOOL_TIMEOUT_MS ?? DEFAULT_TOOL_TIMEOUT_MS,
    idempotencyTtlSeconds: e.TOOL_IDEMPOTENCY_TTL_SECONDS ?? DEFAULT_TOOL_IDEMPOTENCY_TTL_SECONDS,
    roles: parseRoles(e.TOOL_ROLES),
    approvals: parseApprovalsConfig(e.TOOL_APPROVALS, e.APPROVAL_TTL_SECONDS, TOOL_NAMES),
  };
}
