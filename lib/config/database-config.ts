import { z } from "zod";
import { parseOrThrow } from "../validation.js";
import { durationMs, envSchemaOf, setting, withDefaults } from "./settings.js";

/** Database name used when `MONGODB_DB` is not set. */
export const DEFAULT_DB_NAME = "threadwise";
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

const positiveInt = z.coerce.number().int().positive();

/** The settings of the database and what is kept in it, defined once (see `settings.ts`). */
export const DATABASE_SETTINGS = {
  MONGODB_URI: setting({ schema: z.string().min(1), defaultText: "embedded server", description: "a real MongoDB instead of the embedded one" }),
  MONGODB_DB: setting({ schema: z.string().min(1), default: DEFAULT_DB_NAME, description: "database name" }),
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
};

const envSchema = envSchemaOf(DATABASE_SETTINGS);

/** How the MongoClient is sized and how long it waits (`lib/store/mongo-client.ts` applies the defaults). */
export interface MongoClientConfig {
  /** How long an operation waits for a reachable server. Default: `DEFAULT_SERVER_SELECTION_TIMEOUT_MS`. */
  serverSelectionTimeoutMs?: number;
  /** How long an operation waits for an answer on an open connection. Default: `DEFAULT_SOCKET_TIMEOUT_MS`. */
  socketTimeoutMs?: number;
  /** Most connections to one server. Default: the driver's 100 (the stack sets a small pool per function). */
  maxPoolSize?: number;
  /** A connection idle this long is closed instead of reused. Default: none (the stack sets `DEFAULT_MONGODB_MAX_IDLE_SECONDS` of infra/stage-config.ts). */
  maxIdleTimeMs?: number;
}

/** The database, its client and how long what it holds is kept. */
export interface DatabaseConfig {
  mongodbUri?: string;
  dbName: string;
  mongo: MongoClientConfig;
  /** How long a turn's lease on its conversation lasts unless renewed. Default: `DEFAULT_LEASE_TTL_MS`. */
  leaseTtlMs?: number;
  /** Days of inactivity before a conversation expires from every collection. Default: `DEFAULT_RETENTION_DAYS`. */
  retentionDays?: number;
  /** Checkpoints kept per thread after each turn. Default: `DEFAULT_CHECKPOINTS_KEPT`. */
  checkpointsKept?: number;
}

export function loadDatabaseConfig(env: Record<string, string | undefined>): DatabaseConfig {
  const e = withDefaults(DATABASE_SETTINGS, parseOrThrow(envSchema, env, "invalid configuration"));
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
  };
}
