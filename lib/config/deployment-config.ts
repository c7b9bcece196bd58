import { z } from "zod";
import { parseOrThrow } from "../validation.js";
import { CREDENTIAL_SECRET_NAMES, CREDENTIAL_SECRETS, type CredentialSecretName } from "./credentials.js";
import { durationMs, envSchemaOf, setting, withDefaults, type Settings } from "./settings.js";

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

/** The settings the stack sets for the Lambda handlers (their defaults serve local mode), defined once (see `settings.ts`). */
export const DEPLOYMENT_SETTINGS = {
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

const envSchema = envSchemaOf(DEPLOYMENT_SETTINGS);
const secretArnSchema = envSchemaOf(SECRET_ARN_SETTINGS);

/** Set by the CDK stack for the Lambda handlers; unused in local mode. */
export interface DeploymentConfig {
  /** The credentials secrets this function is granted, by name (`lib/config/credentials.ts`); each holds JSON. */
  secretArns: Partial<Record<CredentialSecretName, string>>;
  /** SQS FIFO queue of turns for the worker; without it every API turn runs in the request. */
  turnQueueUrl?: string;
  /** The streaming function's URL (docs/streaming.md), where the HTTP API sends a client that asks it for an event stream. */
  streamingUrl?: string;
  /** Default: `DEFAULT_TURN_MAX_RECEIVES`. */
  turnMaxReceives: number;
  /** Default: `DEFAULT_SYNC_TURN_DEADLINE_MS`. */
  syncTurnDeadlineMs: number;
  /** `SYNC_TURN_MAX_MS`. Default: none (a model call under way at the deadline always finishes). */
  syncTurnMaxMs?: number;
  /** Bytes of turn events one process keeps for its live followers. Default: `DEFAULT_LIVE_EVENTS_MAX_BYTES`. */
  liveEventsMaxBytes: number;
  /** Default: `DEFAULT_SECRET_CACHE_MS`. */
  secretCacheMs: number;
  /** Refuse a MongoDB URI that does not use TLS (set in AWS, where the database is across a network). */
  mongodbRequireTls: boolean;
}

export function loadDeploymentConfig(env: Record<string, string | undefined>): DeploymentConfig {
  const e = withDefaults(DEPLOYMENT_SETTINGS, parseOrThrow(envSchema, env, "invalid configuration"));
  const arns = parseOrThrow(secretArnSchema, env, "invalid configuration");
  return {
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
  };
}
