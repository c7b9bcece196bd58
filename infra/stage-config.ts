import type { Node } from "constructs";
import { z } from "zod";
import { DEFAULT_BEDROCK_MODEL_ID } from "../lib/config/model-config.js";
import { DEFAULT_DB_NAME } from "../lib/config/database-config.js";
import { DEFAULT_JWT_AUDIENCE, parseChannelRoles } from "../lib/config/auth-config.js";
import { CREDENTIAL_SECRET_NAMES, type CredentialSecretName } from "../lib/config/credentials.js";
import { DEFAULT_ATHENA_CATALOG, loadToolsConfig } from "../lib/config/tools-config.js";
import { DEFAULT_LIMITS_ADMIN_ROLE, LIMIT_NAMES, LIMIT_VARIABLES, type LimitName } from "../lib/config/limits-config.js";
import { DEFAULT_CONTENT_ENCRYPTION, DEFAULT_CONTENT_KEY_DELETION_DAYS } from "../lib/config/encryption-config.js";
import { ValidationError } from "../lib/errors.js";
import { parseOrThrow } from "../lib/validation.js";
import type { AlarmDestinations } from "./constructs/alarm-topic.js";

/** Stage deployed when `-c stage=...` is not given. */
export const DEFAULT_STAGE = "dev";
/** Days CloudWatch keeps function and access logs; must be a value CloudWatch Logs accepts. */
export const DEFAULT_LOG_RETENTION_DAYS = 30;
/** Longest a worker invocation (one turn) may run. */
export const DEFAULT_WORKER_TIMEOUT_SECONDS = 300;
/** Upper bound on concurrent worker invocations fed by the queue (SQS event source minimum is 2). */
export const DEFAULT_WORKER_MAX_CONCURRENCY = 10;
/**
 * Event streams the streaming URL serves at once: its function's reserved concurrency. A stream
 * holds its container for as long as the turn runs (up to 14 minutes); a client beyond the bound
 * gets 429 and reconnects (`Last-Event-ID`), or polls the turn through the HTTP API.
 */
export const DEFAULT_STREAM_CONCURRENCY = 10;
/** Receives of one turn message before it moves to the dead-letter queue. */
export const DEFAULT_MAX_RECEIVE_COUNT = 3;
/**
 * MongoDB connections one stage may hold at most, all its functions' containers together: an
 * Atlas M10 allows 1,500, shared here with other stages and tools (docs/deploying.md, "MongoDB from Lambda").
 */
export const DEFAULT_MONGODB_CONNECTION_BUDGET = 500;
/** Members of the replica set: each container holds one monitoring connection to every member. */
export const DEFAULT_MONGODB_REPLICA_SET_MEMBERS = 3;
/**
 * Seconds a pooled MongoDB connection may sit idle before it is closed rather than reused. A
 * frozen Lambda container's connections may have been dropped without a word (a NAT gateway
 * forgets an idle connection after 350 s); a fresh one costs a handshake instead of a timeout.
 */
export const DEFAULT_MONGODB_MAX_IDLE_SECONDS = 60;
/** NAT gateways of the VPC created by `vpc=nat`: one is cheaper; one per availability zone (2) survives a zone's loss. */
export const DEFAULT_VPC_NAT_GATEWAYS = 1;
/** Requests per second the HTTP API's stage accepts, steady and in a burst (context `apiThrottleRate`, `apiThrottleBurst`). */
export const DEFAULT_API_THROTTLE_RATE = 50;
export const DEFAULT_API_THROTTLE_BURST = 100;
/**
 * Containers each webhook may run at once (context `webhookConcurrency`). A webhook answers in
 * tens of milliseconds, so ten containers take hundreds of events a second; beyond that API
 * Gateway answers 429 and Slack and the Bot Framework retry.
 */
export const DEFAULT_WEBHOOK_CONCURRENCY = 10;
/** Stages whose data (secret, logs, queues) is retained when the stack is deleted, unless `retainData` says otherwise. */
export const DEFAULT_RETAINED_STAGES: readonly string[] = ["prod"];

/** The AWS account and region a stage deploys into. */
export interface StageEnvironment {
  account: string;
  region: string;
}

/**
 * Where each stage deploys, pinned in code: `cdk deploy` refuses credentials of another account,
 * and a stage whose data is retained (prod) must be listed, so `-c stage=prod` never lands in
 * whatever account the shell's credentials reach. Replace the example account with yours
 * (docs/deploying.md). A stage not listed deploys where the CLI's credentials point.
 */
export const STAGE_ENVIRONMENTS: Readonly<Record<string, StageEnvironment>> = {
  prod: { account: "123456789012", region: "us-east-1" },
};

/**
 * How the functions' traces leave them (docs/operations.md, "Tracing"): `xray`, Powertools'
 * X-Ray segments per function, the queue hop joined by `AWSTraceHeader` (the OpenTelemetry spans
 * of lib/observability stay no-ops); `adot`, the ADOT Lambda layer (`adotLayerArn`) registers an
 * OpenTelemetry SDK, so the request, queue hop, `chat` and `execute_tool` spans are exported as
 * one trace (to X-Ray, through the layer's collector), and Powertools' own segments are turned off.
 */
export const TRACING_MODES = ["xray", "adot"] as const;
export type TracingMode = (typeof TRACING_MODES)[number];
export const DEFAULT_TRACING_MODE: TracingMode = "xray";

/** How CodeDeploy moves the live alias of each function to a new version. */
export const DEPLOYMENT_STRATEGIES = ["canary", "linear", "all-at-once"] as const;
export type DeploymentStrategy = (typeof DEPLOYMENT_STRATEGIES)[number];
/** A retained stage (prod) shifts 10 % first and watches its alarms for 5 minutes; others switch at once (still rolled back on alarm). */
export const DEFAULT_RETAINED_DEPLOYMENT: DeploymentStrategy = "canary";
export const DEFAULT_DEPLOYMENT: DeploymentStrategy = "all-at-once";

/**
 * The limits of a stage when CDK context `limits` does not set them (docs/limits.md): per user, 10
 * turns a minute, 3 turns and 3 streams at once, 2,000,000 weighted tokens a day and $50 a month;
 * tenants unlimited as a whole until one is given a budget through the admin API or context.
 */
export const DEFAULT_STAGE_LIMITS: StageLimits = {
  user: { turnsPerMinute: 10, concurrentTurns: 3, concurrentStreams: 3, tokensPerDay: 2_000_000, usdPerMonth: 50 },
  tenant: {},
};

/** Defaults of every user's and every tenant's limits, by limit name. */
export interface StageLimits {
  user: Partial<Record<LimitName, number>>;
  tenant: Partial<Record<LimitName, number>>;
}

const limitValues = z.partialRecord(z.enum(LIMIT_NAMES), z.number().positive());
const limitsContext = z
  .union([z.string(), z.record(z.string(), z.unknown())])
  .transform((v, ctx) => {
    try {
      return typeof v === "string" ? (JSON.parse(v) as unknown) : v;
    } catch {
      ctx.addIssue({ code: "custom", message: 'JSON {"user": {"tokensPerDay": 2000000}, "tenant": {"usdPerMonth": 500}}' });
      return z.NEVER;
    }
  })
  .pipe(z.strictObject({ user: limitValues.optional(), tenant: limitValues.optional() }));

/** The functions' environment for a stage's limits: `LIMIT_USER_*` and `LIMIT_TENANT_*`. */
export function limitsEnvironment(limits: StageLimits): Record<string, string> {
  return Object.fromEntries(
    (["user", "tenant"] as const).flatMap((scope) =>
      Object.entries(limits[scope]).map(([name, value]) => [LIMIT_VARIABLES[scope][name as LimitName], String(value)]),
    ),
  );
}

/** CloudWatch Logs retention values, in days. */
const LOG_RETENTION_DAYS = [1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653];

/**
 * Longest Athena schema description accepted: Lambda allows 4 KB of environment variables per
 * function in all, and the description shares them with everything else.
 */
export const MAX_ATHENA_SCHEMA_DESCRIPTION_CHARS = 2_000;

/** Context values arrive as strings from `-c key=value` and as JSON values from cdk.json. */
const contextNumber = z.coerce.number().int().positive();
const contextBoolean = z.union([z.boolean(), z.enum(["true", "false"]).transform((v) => v === "true")]);
/** A list as a JSON array (cdk.json) or comma-separated (`-c key=a,b`). */
const contextList = <T extends z.ZodType<string>>(item: T) =>
  z.preprocess(
    (v) =>
      typeof v === "string"
        ? v
            .split(",")
            .map((s) => s.trim())
            .filter((s) => s.length > 0)
        : v,
    z.array(item).min(1),
  );

const S3_BUCKET_NAME = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const S3_BUCKET_ARN = /^arn:aws[a-z-]*:s3:::[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const S3_URI = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/(.*))?$/;

const contextSchema = z.object({
  stage: z
    .string()
    .regex(/^[a-z][a-z0-9-]{0,15}$/, "lowercase letters, digits and dashes, starting with a letter, at most 16 characters")
    .optional(),
  jwtIssuer: z.string().url().optional(),
  jwtAudience: z.string().min(1).optional(),
  jwtJwksUrl: z.string().url().optional(),
  jwtTenantClaim: z.string().min(1).optional(),
  jwtRequireTenant: contextBoolean.optional(),
  operatorRole: z.string().min(1).optional(),
  bedrockModelId: z.string().min(1).optional(),
  bedrockFoundationModelId: z.string().min(1).optional(),
  recallEmbeddingsModelId: z
    .string()
    .regex(/^amazon\.titan-embed-text-v2:\d+$/, "a Titan Text Embeddings V2 model id (amazon.titan-embed-text-v2:0), whose request format search speaks")
    .optional(),
  secretArns: z
    .union([z.string(), z.record(z.string(), z.unknown())])
    .transform((v, ctx) => {
      try {
        return typeof v === "string" ? (JSON.parse(v) as unknown) : v;
      } catch {
        ctx.addIssue({ code: "custom", message: 'JSON {"database": "arn:…", …}' });
        return z.NEVER;
      }
    })
    .pipe(z.partialRecord(z.enum(CREDENTIAL_SECRET_NAMES as [CredentialSecretName, ...CredentialSecretName[]]), z.string().startsWith("arn:aws")))
    .optional(),
  secretsKmsKeyArn: z
    .string()
    .regex(/^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key\/[0-9a-f-]+$/, "a KMS key ARN")
    .optional(),
  mongodbDb: z.string().min(1).optional(),
  logRetentionDays: contextNumber.refine((d) => LOG_RETENTION_DAYS.includes(d), `one of ${LOG_RETENTION_DAYS.join(", ")}`).optional(),
  workerTimeoutSeconds: contextNumber.max(900).optional(),
  workerMaxConcurrency: contextNumber.min(2).max(1000).optional(),
  streamConcurrency: contextNumber.max(1000).optional(),
  maxReceiveCount: contextNumber.max(1000).optional(),
  alarmTopicArn: z.string().startsWith("arn:").optional(),
  alarmEmails: contextList(z.email()).optional(),
  alarmUrls: contextList(z.url({ protocol: /^https$/ })).optional(),
  alarmSlackChannel: z
    .string()
    .regex(/^T[A-Z0-9]+\/[CG][A-Z0-9]+$/, "<Slack workspace id>/<channel id> (T…/C…), the workspace authorized in AWS Chatbot")
    .optional(),
  apiThrottleRate: contextNumber.max(100_000).optional(),
  apiThrottleBurst: contextNumber.max(100_000).optional(),
  webhookConcurrency: contextNumber.max(1000).optional(),
  retainData: contextBoolean.optional(),
  mongodbConnectionBudget: contextNumber.max(100_000).optional(),
  mongodbReplicaSetMembers: contextNumber.max(50).optional(),
  mongodbMaxIdleSeconds: contextNumber.max(3_600).optional(),
  vpc: z.enum(["none", "nat"]).optional(),
  vpcNatGateways: contextNumber.max(3).optional(),
  atlasPrivateEndpointServiceName: z
    .string()
    .regex(/^com\.amazonaws\.vpce\.[a-z0-9-]+\.vpce-svc-[0-9a-f]+$/, "a VPC endpoint service name (com.amazonaws.vpce.<region>.vpce-svc-…)")
    .optional(),
  athenaWorkgroup: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,128}$/, "an Athena workgroup name")
    .optional(),
  athenaDatabase: z
    .string()
    .regex(/^[a-z0-9_]{1,255}$/, "lowercase letters, digits and underscores, as Athena names Glue databases")
    .optional(),
  athenaCatalog: z
    .string()
    .regex(/^[A-Za-z0-9_@-]{1,128}$/, "an Athena data catalog name")
    .optional(),
  athenaOutputLocation: z.string().regex(S3_URI, "s3://bucket/prefix").optional(),
  athenaResultsBucket: z.string().regex(S3_BUCKET_NAME, "an S3 bucket name").optional(),
  athenaDataBucketArns: contextList(z.string().regex(S3_BUCKET_ARN, "an S3 bucket ARN (arn:aws:s3:::bucket)")).optional(),
  athenaSchemaDescription: z.string().min(1).max(MAX_ATHENA_SCHEMA_DESCRIPTION_CHARS).optional(),
  knowledgeBaseId: z
    .string()
    .regex(/^[0-9A-Za-z]{1,10}$/, "a Bedrock knowledge base id")
    .optional(),
  knowledgeBaseRegion: z
    .string()
    .regex(/^[a-z]{2}(-[a-z]+)+-\d$/, "an AWS region")
    .optional(),
  powerBiTenantId: z
    .string()
    .regex(/^[A-Za-z0-9.-]{1,255}$/, "an Entra tenant id or domain")
    .optional(),
  powerBiGroupId: z.guid().optional(),
  powerBiDatasetId: z.guid().optional(),
  followUpWebhookUrl: z.url({ protocol: /^https$/ }).optional(),
  toolRoles: z.union([z.string(), z.record(z.string(), z.unknown())]).optional(),
  toolApprovals: z.union([z.string(), z.record(z.string(), z.unknown())]).optional(),
  slackRoles: z.union([z.string(), z.record(z.string(), z.unknown())]).optional(),
  teamsRoles: z.union([z.string(), z.record(z.string(), z.unknown())]).optional(),
  sampleTools: contextBoolean.optional(),
  deployment: z.enum(DEPLOYMENT_STRATEGIES).optional(),
  limits: limitsContext.optional(),
  tracing: z.enum(TRACING_MODES).optional(),
  streamCdn: contextBoolean.optional(),
  mcpOAuth: contextBoolean.optional(),
  contentEncryption: z.enum(["on", "off"]).optional(),
  contentKeyDeletionDays: z.coerce.number().int().min(7).max(30).optional(),
  contentKeyRotationDays: z.coerce.number().int().min(0).max(3650).optional(),
  streamWebAclArn: z
    .string()
    .regex(/^arn:aws[a-z-]*:wafv2:us-east-1:\d{12}:global\/webacl\/[\w-]+\/[0-9a-f-]+$/, "a CLOUDFRONT-scope (global, us-east-1) AWS WAF web ACL ARN")
    .optional(),
  adotLayerArn: z
    .string()
    .regex(
      /^arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:layer:[A-Za-z0-9_-]+:\d+$/,
      "a Lambda layer version ARN (arn:aws:lambda:<region>:<account>:layer:<name>:<version>)",
    )
    .optional(),
});

/** Everything that differs between deployments, read from CDK context once, in app.ts. */
export interface StageConfig {
  stage: string;
  /**
   * Who signs the API's tokens. Unset: the stack creates an Amazon Cognito user pool and app client
   * as the issuer and audience (infra/constructs/api-user-pool.ts), and `jwtAudience`, `jwtJwksUrl` are refused.
   */
  jwtIssuer?: string;
  /** Audiences accepted by the API Gateway JWT authorizer (context: comma-separated), for `jwtIssuer`. */
  jwtAudience: string[];
  jwtJwksUrl?: string;
  jwtTenantClaim?: string;
  /**
   * Refuse API tokens without the tenant claim (`JWT_REQUIRE_TENANT`). Unset: true with the stack's
   * Cognito pool (whose access tokens carry no tenant), false with a `jwtIssuer`.
   */
  jwtRequireTenant?: boolean;
  /** The API role of the deployment's operators (`OPERATOR_ROLE`, docs/security.md); unset: nobody is an operator. */
  operatorRole?: string;
  /** Bedrock model id, cross-region inference profile id, or either's ARN. */
  bedrockModelId: string;
  /** Foundation model behind an application inference profile ARN (unknowable from the ARN). */
  bedrockFoundationModelId?: string;
  /** Set: `search_conversation` ranks with this Bedrock embeddings model too; unset: lexically only. */
  recallEmbeddingsModelId?: string;
  /** Existing credentials secrets, by name; every one not named is created by the stack. */
  secretArns: Partial<Record<CredentialSecretName, string>>;
  /** The customer-managed KMS key the imported secrets are encrypted with; unset: the AWS managed key. */
  secretsKmsKeyArn?: string;
  mongodbDb: string;
  logRetentionDays: number;
  workerTimeoutSeconds: number;
  workerMaxConcurrency: number;
  /** Reserved concurrency of the streaming function: event streams at once. */
  streamConcurrency: number;
  maxReceiveCount: number;
  /** Who hears the alarms: a retained stage (prod) must name at least one (synth refuses otherwise). */
  alarms: AlarmDestinations;
  /** The stage's scale ceilings (docs/deploying.md, "Sizing"). */
  ceilings: StageCeilings;
  /** Also: termination protection, and queues and log groups retained with the stack's deletion. */
  retainData: boolean;
  /** Unset: environment-agnostic, deployed where the CLI's credentials point. */
  environment?: StageEnvironment;
  deployment: DeploymentStrategy;
  /** What the stage's functions may hold of MongoDB's connections; reserved concurrency is derived from it. */
  mongodb: { connectionBudget: number; replicaSetMembers: number; maxIdleSeconds: number };
  /** Unset: the functions run outside any VPC. */
  vpc?: StageVpcConfig;
  /** AWS engines and settings of the tools for the functions that run turns; all unset: local defaults. */
  tools: StageToolsConfig;
  /** Defaults of every user's and tenant's limits (`limits` context over `DEFAULT_STAGE_LIMITS`, per scope). */
  limits: StageLimits;
  /**
   * Set: CloudFront with AWS WAF in front of the streaming URL, which becomes `AWS_IAM` behind
   * origin access control (`streamCdn`; docs/deploying.md). `webAclArn`: an existing web ACL; unset, the stack makes one.
   */
  streamCdn?: { webAclArn?: string };
  /** `xray` (default), or the ADOT layer with its ARN (`tracing`, `adotLayerArn`). */
  tracing: { mode: "xray" } | { mode: "adot"; layerArn: string };
  /**
   * Per-user OAuth to MCP servers (`mcpOAuth`; docs/mcp-oauth.md): a KMS key sealing users' tokens, granted to the
   * functions that run turns or serve the callback, with the API's callback URL. Default: off (`oauth` servers' tools are not offered).
   */
  mcpOAuth: boolean;
  /**
   * Contents at rest (docs/security.md, "Contents at rest in AWS"): on unless `contentEncryption=off` says
   * otherwise, each tenant's contents under its own KMS key, which a tenant's erasure schedules for deletion
   * after `keyDeletionDays` (`contentKeyDeletionDays`, 7–30, default 7); the worker's hourly key maintenance rotates a
   * tenant's key once it is `keyRotationDays` old (`contentKeyRotationDays`, 0 = on demand only; default
   * {@link DEFAULT_STAGE_KEY_ROTATION_DAYS}).
   */
  contentEncryption: { enabled: boolean; keyDeletionDays: number; keyRotationDays: number };
}

export interface StageCeilings {
  /** Requests per second the HTTP API's stage accepts (steady), and in a burst; beyond them API Gateway answers 429. */
  apiThrottleRate: number;
  apiThrottleBurst: number;
  /** Containers each webhook function may run at once (its reserved concurrency). */
  webhookConcurrency: number;
}

/** The functions in private subnets of a VPC the stack creates, their internet traffic through NAT gateways with fixed addresses. */
export interface StageVpcConfig {
  natGateways: number;
  /** Atlas's private endpoint service: the stack adds an interface endpoint to it (AWS PrivateLink). */
  atlasPrivateEndpointServiceName?: string;
}

/** Where Athena writes query results, as a bucket and a key prefix ("" for the whole bucket). */
export interface S3Location {
  bucket: string;
  prefix: string;
}

export interface AthenaStageConfig {
  workgroup: string;
  database: string;
  /** Default `AwsDataCatalog` (this account's Glue Data Catalog). */
  catalog: string;
  /** `athenaOutputLocation`; unset: the workgroup's own setting decides. */
  outputLocation?: string;
  /** The location the functions may read and write results in: the output location, else `athenaResultsBucket`. */
  results?: S3Location;
  /** Buckets of the tables' data, readable by the functions. */
  dataBucketArns: string[];
  schemaDescription?: string;
}

export interface StageToolsConfig {
  /** Set: `sql_query` runs on Athena. */
  athena?: AthenaStageConfig;
  /** Set: `search_documents` retrieves from this Bedrock knowledge base. */
  knowledgeBase?: { id: string /** Unset: the stack's region. */; region?: string };
  /** Set: `query_semantic_model` is offered; its client id and secret come from the credentials secret. */
  powerBi?: { tenantId: string; groupId: string; datasetId: string };
  followUpWebhookUrl?: string;
  /** `TOOL_ROLES` as normalized JSON: tool name to the roles allowed to use it. */
  toolRoles?: string;
  /** `TOOL_APPROVALS` as normalized JSON: which tool calls wait for a person's decision, and who may decide. */
  toolApprovals?: string;
  /** `SLACK_ROLES` and `TEAMS_ROLES` as normalized JSON: the roles of channel users, by workspace or tenant. */
  channelRoles: { slack?: string; teams?: string };
  /** Without Athena or a knowledge base, keep the sample SQLite sales data and handbook (a dev stage) rather than no such tool. */
  sampleTools: boolean;
}

/** Context keys, in the order documented in cdk.json and docs/deploying.md. */
export const CONTEXT_KEYS = Object.keys(contextSchema.shape) as (keyof typeof contextSchema.shape)[];

/** Reads and validates the stage configuration from CDK context (cdk.json and `-c` flags). */
export function readStageConfig(node: Node, environments: Readonly<Record<string, StageEnvironment>> = STAGE_ENVIRONMENTS): StageConfig {
  const raw: Record<string, unknown> = {};
  for (const key of CONTEXT_KEYS) {
    const value: unknown = node.tryGetContext(key);
    // An empty value (`-c secretArn=` or "" in cdk.json) means "not set", so defaults apply.
    if (value !== undefined && value !== null && value !== "") raw[key] = value;
  }
  if (node.tryGetContext("secretArn")) {
    // One secret for every key was replaced by one per group of readers: ignoring it would deploy empty secrets.
    throw invalidContext([
      {
        path: "secretArn",
        message: 'replaced by secretArns: split the secret as "The credentials secrets" in docs/deploying.md says and pass {"database": "arn:…", …}',
      },
    ]);
  }
  const c = parseOrThrow(contextSchema, raw, "invalid CDK context");
  const stage = c.stage ?? DEFAULT_STAGE;
  if (c.jwtIssuer === undefined && (c.jwtAudience !== undefined || c.jwtJwksUrl !== undefined)) {
    throw invalidContext([
      {
        path: c.jwtAudience !== undefined ? "jwtAudience" : "jwtJwksUrl",
        message: "applies to the issuer jwtIssuer names: without jwtIssuer the stack's Cognito user pool issues the tokens, for its own app client",
      },
    ]);
  }
  if (c.operatorRole !== undefined && c.operatorRole === DEFAULT_LIMITS_ADMIN_ROLE) {
    throw invalidContext([
      {
        path: "operatorRole",
        message: `must differ from the tenant-admin role (${DEFAULT_LIMITS_ADMIN_ROLE}): every tenant's admin would administer every tenant`,
      },
    ]);
  }
  const tools = readToolsConfig(c);
  const retainData = c.retainData ?? DEFAULT_RETAINED_STAGES.includes(stage);
  const environment = environments[stage];
  if (retainData && !environment) {
    throw invalidContext([
      { path: "stage", message: `${stage} keeps its data, so its account and region must be pinned in STAGE_ENVIRONMENTS (infra/stage-config.ts)` },
    ]);
  }
  const alarms: AlarmDestinations = {
    topicArn: c.alarmTopicArn,
    emails: c.alarmEmails ?? [],
    urls: c.alarmUrls ?? [],
    slack: c.alarmSlackChannel ? { workspaceId: c.alarmSlackChannel.split("/")[0], channelId: c.alarmSlackChannel.split("/")[1] } : undefined,
  };
  if (retainData && !alarms.topicArn && alarms.emails.length === 0 && alarms.urls.length === 0 && !alarms.slack) {
    throw invalidContext([
      {
        path: "alarmTopicArn",
        message:
          `${stage} keeps its data, so its alarms must reach a person: set alarmTopicArn, alarmEmails, alarmUrls ` +
          '(PagerDuty) or alarmSlackChannel (docs/operations.md, "Who is paged")',
      },
    ]);
  }
  if (alarms.topicArn && (alarms.emails.length > 0 || alarms.urls.length > 0 || alarms.slack)) {
    throw invalidContext([
      { path: "alarmEmails", message: "subscriptions are for the topic the stack creates; subscribe them to alarmTopicArn's topic instead" },
    ]);
  }
  return {
    stage,
    jwtIssuer: c.jwtIssuer,
    jwtAudience: (c.jwtAudience ?? DEFAULT_JWT_AUDIENCE)
      .split(",")
      .map((a) => a.trim())
      .filter((a) => a.length > 0),
    jwtJwksUrl: c.jwtJwksUrl,
    jwtTenantClaim: c.jwtTenantClaim,
    jwtRequireTenant: c.jwtRequireTenant,
    operatorRole: c.operatorRole,
    bedrockModelId: c.bedrockModelId ?? DEFAULT_BEDROCK_MODEL_ID,
    bedrockFoundationModelId: c.bedrockFoundationModelId,
    recallEmbeddingsModelId: c.recallEmbeddingsModelId,
    secretArns: c.secretArns ?? {},
    secretsKmsKeyArn: c.secretsKmsKeyArn,
    mongodbDb: c.mongodbDb ?? DEFAULT_DB_NAME,
    logRetentionDays: c.logRetentionDays ?? DEFAULT_LOG_RETENTION_DAYS,
    workerTimeoutSeconds: c.workerTimeoutSeconds ?? DEFAULT_WORKER_TIMEOUT_SECONDS,
    workerMaxConcurrency: c.workerMaxConcurrency ?? DEFAULT_WORKER_MAX_CONCURRENCY,
    streamConcurrency: c.streamConcurrency ?? DEFAULT_STREAM_CONCURRENCY,
    maxReceiveCount: c.maxReceiveCount ?? DEFAULT_MAX_RECEIVE_COUNT,
    alarms,
    ceilings: {
      apiThrottleRate: c.apiThrottleRate ?? DEFAULT_API_THROTTLE_RATE,
      apiThrottleBurst: c.apiThrottleBurst ?? DEFAULT_API_THROTTLE_BURST,
      webhookConcurrency: c.webhookConcurrency ?? DEFAULT_WEBHOOK_CONCURRENCY,
    },
    retainData,
    environment,
    deployment: c.deployment ?? (retainData ? DEFAULT_RETAINED_DEPLOYMENT : DEFAULT_DEPLOYMENT),
    mongodb: {
      connectionBudget: c.mongodbConnectionBudget ?? DEFAULT_MONGODB_CONNECTION_BUDGET,
      replicaSetMembers: c.mongodbReplicaSetMembers ?? DEFAULT_MONGODB_REPLICA_SET_MEMBERS,
      maxIdleSeconds: c.mongodbMaxIdleSeconds ?? DEFAULT_MONGODB_MAX_IDLE_SECONDS,
    },
    vpc: readVpcConfig(c),
    tools,
    limits: {
      user: { ...DEFAULT_STAGE_LIMITS.user, ...c.limits?.user },
      tenant: { ...DEFAULT_STAGE_LIMITS.tenant, ...c.limits?.tenant },
    },
    tracing: readTracingConfig(c),
    streamCdn: readStreamCdnConfig(c, environment),
    mcpOAuth: c.mcpOAuth ?? false,
    contentEncryption: readContentEncryption(c),
  };
}

/** Days a deployed tenant key is used before the schedule rotates it: yearly, as KMS rotates its own keys by default. */
export const DEFAULT_STAGE_KEY_ROTATION_DAYS = 365;

/** On by default; off only when the context says so, and then a deletion window or rotation period means nothing. */
function readContentEncryption(c: Context): StageConfig["contentEncryption"] {
  const enabled = (c.contentEncryption ?? DEFAULT_CONTENT_ENCRYPTION) === "on";
  for (const path of ["contentKeyDeletionDays", "contentKeyRotationDays"] as const) {
    if (!enabled && c[path] !== undefined) throw invalidContext([{ path, message: "needs contentEncryption=on (no tenant keys are made with it off)" }]);
  }
  return {
    enabled,
    keyDeletionDays: c.contentKeyDeletionDays ?? DEFAULT_CONTENT_KEY_DELETION_DAYS,
    keyRotationDays: c.contentKeyRotationDays ?? DEFAULT_STAGE_KEY_ROTATION_DAYS,
  };
}

/** A CLOUDFRONT-scope web ACL lives in us-east-1: the stack makes one only there, else it must be given. */
function readStreamCdnConfig(c: Context, environment: StageEnvironment | undefined): StageConfig["streamCdn"] {
  if (!c.streamCdn) {
    if (c.streamWebAclArn !== undefined) throw invalidContext([{ path: "streamWebAclArn", message: "needs streamCdn=true" }]);
    return undefined;
  }
  if (c.streamWebAclArn === undefined && environment?.region !== "us-east-1") {
    throw invalidContext([
      {
        path: "streamWebAclArn",
        message:
          "streamCdn=true in a stage not pinned to us-east-1 needs a CLOUDFRONT-scope web ACL made in us-east-1 " +
          '(docs/deploying.md, "The streaming URL behind CloudFront")',
      },
    ]);
  }
  return { webAclArn: c.streamWebAclArn };
}

/** `adot` needs the layer's ARN (it is regional and versioned, so the stack names none itself); the ARN means nothing without `adot`. */
function readTracingConfig(c: Context): StageConfig["tracing"] {
  const mode = c.tracing ?? DEFAULT_TRACING_MODE;
  if (mode === "xray") {
    if (c.adotLayerArn !== undefined) throw invalidContext([{ path: "adotLayerArn", message: "needs tracing=adot" }]);
    return { mode };
  }
  if (c.adotLayerArn === undefined) {
    throw invalidContext([
      {
        path: "adotLayerArn",
        message: 'tracing=adot needs the ADOT Node.js layer ARN of your region and architecture (arm64) (docs/operations.md, "Tracing")',
      },
    ]);
  }
  return { mode, layerArn: c.adotLayerArn };
}

type Context = z.infer<typeof contextSchema>;

const invalidContext = (issues: { path: string; message: string }[], cause?: unknown) =>
  new ValidationError("invalid CDK context", issues, cause === undefined ? undefined : { cause });

/**
 * One line for a context value the synth refuses, as `npm start` answers a wrong variable: the
 * first key, how many more, and where to fix it. A stack trace would bury the message in `details`.
 */
export function explainContextError(error: ValidationError): string {
  const [first, ...rest] = error.details ?? [];
  const what = first ? `${first.path || "context"}: ${first.message}` : "";
  const more = rest.length > 0 ? ` (and ${rest.length} more)` : "";
  return `${error.message}: ${what}${more}; fix it with -c <key>=<value> or in cdk.json (see docs/deploying.md, "Deploying to AWS").`;
}

/** The VPC keys mean something only with `vpc=nat`, and a customer key only with an imported secret. */
function readVpcConfig(c: Context): StageVpcConfig | undefined {
  const issues: { path: string; message: string }[] = [];
  if (c.vpc !== "nat") {
    for (const key of ["vpcNatGateways", "atlasPrivateEndpointServiceName"] as const) {
      if (c[key] !== undefined) issues.push({ path: key, message: "needs vpc=nat" });
    }
  }
  if (c.secretsKmsKeyArn !== undefined && Object.keys(c.secretArns ?? {}).length === 0) {
    issues.push({ path: "secretsKmsKeyArn", message: "only for imported secrets (secretArns); the stack's own secrets use the AWS managed key" });
  }
  if (issues.length > 0) throw invalidContext(issues);
  if (c.vpc !== "nat") return undefined;
  return { natGateways: c.vpcNatGateways ?? DEFAULT_VPC_NAT_GATEWAYS, atlasPrivateEndpointServiceName: c.atlasPrivateEndpointServiceName };
}

/** The tool keys that only mean something together, checked here so a half-configured engine fails synth, not the first turn. */
function readToolsConfig(c: Context): StageToolsConfig {
  const issues: { path: string; message: string }[] = [];
  const athenaKeys = ["athenaCatalog", "athenaOutputLocation", "athenaResultsBucket", "athenaDataBucketArns", "athenaSchemaDescription"] as const;
  const athenaOn = c.athenaWorkgroup !== undefined || c.athenaDatabase !== undefined;
  if (athenaOn && (c.athenaWorkgroup === undefined || c.athenaDatabase === undefined)) {
    issues.push({ path: c.athenaWorkgroup === undefined ? "athenaWorkgroup" : "athenaDatabase", message: "athenaWorkgroup and athenaDatabase go together" });
  }
  for (const key of athenaKeys) {
    if (!athenaOn && c[key] !== undefined) issues.push({ path: key, message: "needs athenaWorkgroup and athenaDatabase" });
  }
  if (c.athenaOutputLocation !== undefined && c.athenaResultsBucket !== undefined) {
    issues.push({
      path: "athenaResultsBucket",
      message: "only for a workgroup that sets its own results location; with athenaOutputLocation the grant follows that",
    });
  }
  if (c.knowledgeBaseRegion !== undefined && c.knowledgeBaseId === undefined) {
    issues.push({ path: "knowledgeBaseRegion", message: "needs knowledgeBaseId" });
  }
  const powerBi = [c.powerBiTenantId, c.powerBiGroupId, c.powerBiDatasetId];
  if (powerBi.some((v) => v !== undefined) && !powerBi.every((v) => v !== undefined)) {
    issues.push({ path: "powerBiTenantId", message: "powerBiTenantId, powerBiGroupId and powerBiDatasetId go together" });
  }
  const toolRoles = c.toolRoles === undefined ? undefined : normalizeToolRoles(c.toolRoles);
  const toolApprovals = c.toolApprovals === undefined ? undefined : normalizeToolApprovals(c.toolApprovals);
  const channelRoles = {
    slack: c.slackRoles === undefined ? undefined : normalizeChannelRoles(c.slackRoles, "slackRoles", "SLACK_ROLES"),
    teams: c.teamsRoles === undefined ? undefined : normalizeChannelRoles(c.teamsRoles, "teamsRoles", "TEAMS_ROLES"),
  };
  if (issues.length > 0) throw invalidContext(issues);

  let athena: AthenaStageConfig | undefined;
  if (c.athenaWorkgroup !== undefined && c.athenaDatabase !== undefined) {
    const output = c.athenaOutputLocation === undefined ? undefined : S3_URI.exec(c.athenaOutputLocation);
    athena = {
      workgroup: c.athenaWorkgroup,
      database: c.athenaDatabase,
      catalog: c.athenaCatalog ?? DEFAULT_ATHENA_CATALOG,
      outputLocation: c.athenaOutputLocation,
      results: output
        ? { bucket: output[1], prefix: (output[2] ?? "").replace(/\/+$/, "") }
        : c.athenaResultsBucket !== undefined
          ? { bucket: c.athenaResultsBucket, prefix: "" }
          : undefined,
      dataBucketArns: c.athenaDataBucketArns ?? [],
      schemaDescription: c.athenaSchemaDescription,
    };
  }
  return {
    athena,
    knowledgeBase: c.knowledgeBaseId === undefined ? undefined : { id: c.knowledgeBaseId, region: c.knowledgeBaseRegion },
    powerBi:
      c.powerBiTenantId && c.powerBiGroupId && c.powerBiDatasetId
        ? { tenantId: c.powerBiTenantId, groupId: c.powerBiGroupId, datasetId: c.powerBiDatasetId }
        : undefined,
    followUpWebhookUrl: c.followUpWebhookUrl,
    toolRoles,
    toolApprovals,
    channelRoles,
    sampleTools: c.sampleTools ?? false,
  };
}

/** Validates a channel's roles exactly as the worker will read its variable, so a bad map fails synth. */
function normalizeChannelRoles(raw: string | Record<string, unknown>, key: string, variable: string): string {
  try {
    return JSON.stringify(parseChannelRoles(typeof raw === "string" ? raw : JSON.stringify(raw), variable));
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    throw invalidContext([{ path: key, message: error.details?.[0]?.message ?? "invalid roles" }], error);
  }
}

/** Validates `toolRoles` exactly as the functions will read `TOOL_ROLES`, so a bad map fails synth. */
function normalizeToolApprovals(raw: string | Record<string, unknown>): string {
  const json = typeof raw === "string" ? raw : JSON.stringify(raw);
  try {
    return JSON.stringify(loadToolsConfig({ TOOL_APPROVALS: json }).approvals.tools);
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    throw invalidContext(
      [{ path: "toolApprovals", message: 'expected JSON {"tool_name": {"require": "always", "approvers": {...}}} (docs/approvals.md)' }],
      error,
    );
  }
}

function normalizeToolRoles(raw: string | Record<string, unknown>): string {
  const json = typeof raw === "string" ? raw : JSON.stringify(raw);
  try {
    return JSON.stringify(loadToolsConfig({ TOOL_ROLES: json }).roles);
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    throw invalidContext([{ path: "toolRoles", message: 'expected JSON {"tool_name": ["role", ...]}' }], error);
  }
}
