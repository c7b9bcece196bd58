import { z } from "zod";
import { ValidationError } from "../errors.js";
import { parseOrThrow } from "../validation.js";
import { envSchemaOf, setting, withDefaults } from "./settings.js";

/** The limits a tenant or user has (docs/limits.md), as configuration, the admin API and the refusals name them. */
export const LIMIT_NAMES = ["turnsPerMinute", "concurrentTurns", "concurrentStreams", "tokensPerDay", "usdPerMonth"] as const;
export type LimitName = (typeof LIMIT_NAMES)[number];
/** A value per limit; absent or null is no limit. */
export type LimitValues = Partial<Record<LimitName, number | null>>;

/** The tenant-admin role: reads and sets its own tenant's and users' limits, usage and MCP servers through the admin API. */
export const DEFAULT_LIMITS_ADMIN_ROLE = "threadwise:admin";
/** Seconds a container reuses the limits it read from the database: a limit set through the admin API applies within this. */
export const DEFAULT_LIMITS_CACHE_SECONDS = 30;
/** The longest a cache may keep limits: the admin API promises a change applies within a minute. */
export const MAX_LIMITS_CACHE_SECONDS = 60;
/** A model call's reservation not settled within this (its container died) no longer counts once it blocks someone. */
export const DEFAULT_LIMITS_RESERVATION_TTL_SECONDS = 600;
/** A turn's or stream's concurrency slot not released within this (its container died) is freed once it blocks someone; the worker's longest run. */
export const DEFAULT_LIMITS_SLOT_TTL_SECONDS = 900;

const count = z.coerce.number().int().positive();
const dollars = z.coerce.number().positive();

/** Environment variable of each limit's default, for users (`LIMIT_USER_*`) and tenants (`LIMIT_TENANT_*`). */
export const LIMIT_VARIABLES: Record<"user" | "tenant", Record<LimitName, string>> = {
  user: {
    turnsPerMinute: "LIMIT_USER_TURNS_PER_MINUTE",
    concurrentTurns: "LIMIT_USER_CONCURRENT_TURNS",
    concurrentStreams: "LIMIT_USER_CONCURRENT_STREAMS",
    tokensPerDay: "LIMIT_USER_TOKENS_PER_DAY",
    usdPerMonth: "LIMIT_USER_USD_PER_MONTH",
  },
  tenant: {
    turnsPerMinute: "LIMIT_TENANT_TURNS_PER_MINUTE",
    concurrentTurns: "LIMIT_TENANT_CONCURRENT_TURNS",
    concurrentStreams: "LIMIT_TENANT_CONCURRENT_STREAMS",
    tokensPerDay: "LIMIT_TENANT_TOKENS_PER_DAY",
    usdPerMonth: "LIMIT_TENANT_USD_PER_MONTH",
  },
};

const unset = "unset (no limit; the stack sets one)";

/** The settings of the limits, defined once (see `settings.ts`); the stack sets the defaults from CDK context. */
export const LIMITS_SETTINGS = {
  LIMIT_USER_TURNS_PER_MINUTE: setting({ schema: count, defaultText: unset, description: "turns a user may start per minute" }),
  LIMIT_USER_CONCURRENT_TURNS: setting({ schema: count, defaultText: unset, description: "turns of a user running at once" }),
  LIMIT_USER_CONCURRENT_STREAMS: setting({ schema: count, defaultText: unset, description: "event streams a user holds open at once" }),
  LIMIT_USER_TOKENS_PER_DAY: setting({
    schema: count,
    defaultText: unset,
    description: "model tokens a user may spend per UTC day, cache reads and writes weighted as priced",
  }),
  LIMIT_USER_USD_PER_MONTH: setting({ schema: dollars, defaultText: unset, description: "US dollars of model use a user may spend per UTC month" }),
  LIMIT_TENANT_TURNS_PER_MINUTE: setting({ schema: count, defaultText: unset, description: "the same for all users of a tenant together" }),
  LIMIT_TENANT_CONCURRENT_TURNS: setting({ schema: count, defaultText: unset, description: "the same for all users of a tenant together" }),
  LIMIT_TENANT_CONCURRENT_STREAMS: setting({ schema: count, defaultText: unset, description: "the same for all users of a tenant together" }),
  LIMIT_TENANT_TOKENS_PER_DAY: setting({ schema: count, defaultText: unset, description: "the same for all users of a tenant together" }),
  LIMIT_TENANT_USD_PER_MONTH: setting({ schema: dollars, defaultText: unset, description: "the same for all users of a tenant together" }),
  LIMITS_ADMIN_ROLE: setting({
    schema: z.string().min(1),
    default: DEFAULT_LIMITS_ADMIN_ROLE,
    description: "the API role of a tenant's admin: reads and sets limits, usage and MCP servers (`/v1/admin/...`) of the caller's own issuer and tenant only",
  }),
  OPERATOR_ROLE: setting({
    schema: z.string().min(1),
    defaultText: "unset (nobody is an operator)",
    description:
      "the API role of the deployment's operators: the admin API on every issuer and tenant; honoured on API tokens only, " +
      "and must differ from `LIMITS_ADMIN_ROLE`",
  }),
  LIMITS_CACHE_SECONDS: setting({
    schema: z.coerce.number().int().min(0).max(MAX_LIMITS_CACHE_SECONDS),
    default: DEFAULT_LIMITS_CACHE_SECONDS,
    description: "how long a container reuses the limits set in the database (at most 60)",
  }),
  LIMITS_RESERVATION_TTL_SECONDS: setting({
    schema: count,
    default: DEFAULT_LIMITS_RESERVATION_TTL_SECONDS,
    description: "a model call's reservation never settled (its container died) is released after this",
  }),
  LIMITS_SLOT_TTL_SECONDS: setting({
    schema: count,
    default: DEFAULT_LIMITS_SLOT_TTL_SECONDS,
    description: "a turn's or stream's concurrency slot never released is freed after this",
  }),
};

const envSchema = envSchemaOf(LIMITS_SETTINGS);

/** Limits and how they are kept (`lib/limits`, docs/limits.md). */
export interface LimitsConfig {
  /** Defaults of every user; a user's own limits in the database replace them one by one. */
  user: LimitValues;
  /** Defaults of every tenant, all its users together. */
  tenant: LimitValues;
  /** The tenant-admin role (`LIMITS_ADMIN_ROLE`). Default: `DEFAULT_LIMITS_ADMIN_ROLE`. */
  adminRole: string;
  /** The operator role (`OPERATOR_ROLE`). Default: none, so nobody is an operator. */
  operatorRole?: string;
  /** Default: `DEFAULT_LIMITS_CACHE_SECONDS`; at most `MAX_LIMITS_CACHE_SECONDS`. */
  cacheSeconds: number;
  /** Default: `DEFAULT_LIMITS_RESERVATION_TTL_SECONDS`. */
  reservationTtlSeconds: number;
  /** Default: `DEFAULT_LIMITS_SLOT_TTL_SECONDS`. */
  slotTtlSeconds: number;
}

export function loadLimitsConfig(env: Record<string, string | undefined>): LimitsConfig {
  const e = withDefaults(LIMITS_SETTINGS, parseOrThrow(envSchema, env, "invalid configuration")) as Record<string, unknown>;
  const values = (scope: "user" | "tenant"): LimitValues =>
    Object.fromEntries(LIMIT_NAMES.flatMap((name) => (e[LIMIT_VARIABLES[scope][name]] === undefined ? [] : [[name, e[LIMIT_VARIABLES[scope][name]]]])));
  if (e.OPERATOR_ROLE !== undefined && e.OPERATOR_ROLE === e.LIMITS_ADMIN_ROLE) {
    throw new ValidationError("invalid configuration", [
      { path: "OPERATOR_ROLE", message: "must differ from LIMITS_ADMIN_ROLE: otherwise every tenant's admin would administer every tenant" },
    ]);
  }
  return {
    user: values("user"),
    tenant: values("tenant"),
    adminRole: e.LIMITS_ADMIN_ROLE as string,
    ...(e.OPERATOR_ROLE !== undefined && { operatorRole: e.OPERATOR_ROLE as string }),
    cacheSeconds: e.LIMITS_CACHE_SECONDS as number,
    reservationTtlSeconds: e.LIMITS_RESERVATION_TTL_SECONDS as number,
    slotTtlSeconds: e.LIMITS_SLOT_TTL_SECONDS as number,
  };
}
