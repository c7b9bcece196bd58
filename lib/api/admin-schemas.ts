import { z } from "zod";
import { ISSUER_KINDS } from "../auth/principal.js";

/**
 * The admin API's shapes (`lib/api/admin-routes.ts`, docs/limits.md): a tenant or user named by
 * issuer kind, tenant and subject, its limits, and its usage per day.
 */

const name = z.string().min(1).max(200);
const day = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, "YYYY-MM-DD");

/** Which tenant (no `subject`) or user: as the API names a principal. */
export const scopeQuery = z.strictObject({
  issuer: z.enum(ISSUER_KINDS).meta({ description: "`api`, `slack` or `teams`." }),
  tenant: name.optional().meta({ description: "The tenant claim, Slack workspace or Entra tenant; absent for an API user without a tenant." }),
  subject: name.optional().meta({ description: "The user; absent, the tenant as a whole." }),
});

export const usageQuery = scopeQuery.extend({
  from: day.optional().meta({ description: "First UTC day, inclusive. Default: 30 days before `to`." }),
  to: day.optional().meta({ description: "Last UTC day, inclusive. Default: today." }),
});

const count = z.number().int().positive();
/** A scope's own limits: a number sets one, null removes it (no limit), an absent key keeps the default. */
export const limitValues = z.strictObject({
  turnsPerMinute: count.nullable().optional(),
  concurrentTurns: count.nullable().optional(),
  concurrentStreams: count.nullable().optional(),
  tokensPerDay: count.nullable().optional().meta({ description: "Model tokens per UTC day, cache reads and writes weighted as priced." }),
  usdPerMonth: z.number().positive().nullable().optional().meta({ description: "US dollars of model use per UTC month." }),
});

export const setLimitsBody = scopeQuery.extend({ limits: limitValues });

const effective = z.object({
  turnsPerMinute: z.number().nullable(),
  concurrentTurns: z.number().nullable(),
  concurrentStreams: z.number().nullable(),
  tokensPerDay: z.number().nullable(),
  usdPerMonth: z.number().nullable(),
});

const scope = z.object({ kind: z.enum(["user", "tenant"]), issuer: z.enum(ISSUER_KINDS), tenant: z.string().nullable(), subject: z.string().nullable() });

export const limitsView = z.object({
  scope,
  limits: effective.meta({ description: "What applies: the scope's own limits over the defaults; null is no limit." }),
  own: limitValues.nullable().meta({ description: "The scope's own limits, as set; null when none is set." }),
  defaults: limitValues,
  current: z
    .object({
      turnsThisMinute: z.number(),
      concurrentTurns: z.number(),
      concurrentStreams: z.number(),
      tokensToday: z.number(),
      usdThisMonth: z.number(),
    })
    .meta({ description: "What counts against the limits now, reservations of calls under way included." }),
  updatedAt: z.iso.datetime().nullable(),
});

const usageDay = z.object({
  day,
  turns: z.number(),
  modelCalls: z.number(),
  inputTokens: z.number(),
  outputTokens: z.number(),
  cacheReadTokens: z.number(),
  cacheWriteTokens: z.number(),
  weightedTokens: z.number(),
  costUsd: z.number(),
});

export const usageView = z.object({ scope, from: day, to: day, days: z.array(usageDay), total: usageDay.omit({ day: true }) });
