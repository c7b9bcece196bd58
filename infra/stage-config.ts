import type { Node } from "constructs";
import { z } from "zod";
import { DEFAULT_BEDROCK_MODEL_ID, DEFAULT_DB_NAME, DEFAULT_JWT_AUDIENCE } from "../lib/config/config.js";
import { ValidationError } from "../lib/errors.js";

/** Stage deployed when `-c stage=...` is not given. */
export const DEFAULT_STAGE = "dev";
/**
 * Issuer used when `jwtIssuer` is not set. It resolves nowhere, so a stack deployed with it
 * rejects every token instead of trusting an issuer nobody chose; synth warns about it.
 */
export const PLACEHOLDER_JWT_ISSUER = "https://issuer.example.invalid/";
/** Days CloudWatch keeps function and access logs; must be a value CloudWatch Logs accepts. */
export const DEFAULT_LOG_RETENTION_DAYS = 30;
/** Longest a worker invocation (one turn) may run. */
export const DEFAULT_WORKER_TIMEOUT_SECONDS = 300;
/** Upper bound on concurrent worker invocations fed by the queue (SQS event source minimum is 2). */
export const DEFAULT_WORKER_MAX_CONCURRENCY = 10;
/** Receives of one turn message before it moves to the dead-letter queue. */
export const DEFAULT_MAX_RECEIVE_COUNT = 3;
/** Stages whose data (secret, logs) is retained when the stack is deleted, unless `retainData` says otherwise. */
export const DEFAULT_RETAINED_STAGES: readonly string[] = ["prod"];

/** CloudWatch Logs retention values, in days. */
const LOG_RETENTION_DAYS = [1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653];

/** Context values arrive as strings from `-c key=value` and as JSON values from cdk.json. */
const contextNumber = z.coerce.number().int().positive();
const contextBoolean = z.union([z.boolean(), z.enum(["true", "false"]).transform((v) => v === "true")]);

const contextSchema = z.object({
  stage: z
    .string()
    .regex(/^[a-z][a-z0-9-]{0,15}$/, "lowercase letters, digits and dashes, starting with a letter, at most 16 characters")
    .optional(),
  jwtIssuer: z.string().url().optional(),
  jwtAudience: z.string().min(1).optional(),
  jwtJwksUrl: z.string().url().optional(),
  jwtTenantClaim: z.string().min(1).optional(),
  bedrockModelId: z.string().min(1).optional(),
  bedrockFoundationModelId: z.string().min(1).optional(),
  secretArn: z.string().startsWith("arn:").optional(),
  mongodbDb: z.string().min(1).optional(),
  logRetentionDays: contextNumber
    .refine((d) => LOG_RETENTION_DAYS.includes(d), `one of ${LOG_RETENTION_DAYS.join(", ")}`)
    .optional(),
  workerTimeoutSeconds: contextNumber.max(900).optional(),
  workerMaxConcurrency: contextNumber.min(2).max(1000).optional(),
  maxReceiveCount: contextNumber.max(1000).optional(),
  alarmTopicArn: z.string().startsWith("arn:").optional(),
  retainData: contextBoolean.optional(),
});

/** Everything that differs between deployments, read from CDK context once, in app.ts. */
export interface StageConfig {
  stage: string;
  jwtIssuer: string;
  /** Audiences accepted by the API Gateway JWT authorizer (context: comma-separated). */
  jwtAudience: string[];
  jwtJwksUrl?: string;
  jwtTenantClaim?: string;
  /** Bedrock model id, cross-region inference profile id, or either's ARN. */
  bedrockModelId: string;
  /** Foundation model behind an application inference profile ARN (unknowable from the ARN). */
  bedrockFoundationModelId?: string;
  /** Unset: the stack creates the secret. */
  secretArn?: string;
  mongodbDb: string;
  logRetentionDays: number;
  workerTimeoutSeconds: number;
  workerMaxConcurrency: number;
  maxReceiveCount: number;
  alarmTopicArn?: string;
  retainData: boolean;
}

/** Context keys, in the order documented in cdk.json and the README. */
export const CONTEXT_KEYS = Object.keys(contextSchema.shape) as (keyof typeof contextSchema.shape)[];

/** Reads and validates the stage configuration from CDK context (cdk.json and `-c` flags). */
export function readStageConfig(node: Node): StageConfig {
  const raw: Record<string, unknown> = {};
  for (const key of CONTEXT_KEYS) {
    const value: unknown = node.tryGetContext(key);
    // An empty value (`-c secretArn=` or "" in cdk.json) means "not set", so defaults apply.
    if (value !== undefined && value !== null && value !== "") raw[key] = value;
  }
  const parsed = contextSchema.safeParse(raw);
  if (!parsed.success) {
    throw new ValidationError(
      "invalid CDK context",
      parsed.error.issues.map((i) => ({ path: i.path.join("."), message: i.message })),
    );
  }
  const c = parsed.data;
  const stage = c.stage ?? DEFAULT_STAGE;
  return {
    stage,
    jwtIssuer: c.jwtIssuer ?? PLACEHOLDER_JWT_ISSUER,
    jwtAudience: (c.jwtAudience ?? DEFAULT_JWT_AUDIENCE)
      .split(",")
      .map((a) => a.trim())
      .filter((a) => a.length > 0),
    jwtJwksUrl: c.jwtJwksUrl,
    jwtTenantClaim: c.jwtTenantClaim,
    bedrockModelId: c.bedrockModelId ?? DEFAULT_BEDROCK_MODEL_ID,
    bedrockFoundationModelId: c.bedrockFoundationModelId,
    secretArn: c.secretArn,
    mongodbDb: c.mongodbDb ?? DEFAULT_DB_NAME,
    logRetentionDays: c.logRetentionDays ?? DEFAULT_LOG_RETENTION_DAYS,
    workerTimeoutSeconds: c.workerTimeoutSeconds ?? DEFAULT_WORKER_TIMEOUT_SECONDS,
    workerMaxConcurrency: c.workerMaxConcurrency ?? DEFAULT_WORKER_MAX_CONCURRENCY,
    maxReceiveCount: c.maxReceiveCount ?? DEFAULT_MAX_RECEIVE_COUNT,
    alarmTopicArn: c.alarmTopicArn,
    retainData: c.retainData ?? DEFAULT_RETAINED_STAGES.includes(stage),
  };
}
