import { FUNCTION_POOL_SIZES } from "./connection-budget.js";
import { DEFAULT_API_THROTTLE_BURST, DEFAULT_API_THROTTLE_RATE, DEFAULT_MONGODB_REPLICA_SET_MEMBERS, DEFAULT_WEBHOOK_CONCURRENCY } from "./stage-config.js";

/** What a stage's sizing assumes of its turns; measure yours on the dashboard ("Turn duration", "Tokens per turn"). */
export interface TurnProfile {
  /** Seconds a turn holds its container (API, stream or worker). */
  turnSeconds: number;
  modelCallsPerTurn: number;
  /** Tokens each model call sends (cached ones included: they count toward Bedrock's tokens-per-minute quota) and writes. */
  inputTokensPerCall: number;
  outputTokensPerCall: number;
  /** Concurrency above the average (Little's law) for bursts. */
  headroom: number;
  /** HTTP API requests per turn: the question, and polls or follows. */
  requestsPerTurn: number;
}

export const DEFAULT_TURN_PROFILE: TurnProfile = {
  turnSeconds: 10,
  modelCallsPerTurn: 2,
  inputTokensPerCall: 6_000,
  outputTokensPerCall: 400,
  headroom: 1.5,
  requestsPerTurn: 3,
};

/** Atlas dedicated tiers and their connection limits (Atlas documentation, "Connection Limits and Cluster Tier"). */
export const ATLAS_CONNECTION_LIMITS: readonly (readonly [tier: string, connections: number])[] = [
  ["M10", 1_500],
  ["M20", 3_000],
  ["M30", 3_000],
  ["M40", 6_000],
  ["M50", 16_000],
  ["M60", 32_000],
];

/** Lambda's concurrency that is never reserved. */
const UNRESERVED = 100;

export interface Sizing {
  turnsPerSecond: number;
  /** Containers running turns at once (api, stream and worker together). */
  turnConcurrency: number;
  /** The account's "Concurrent executions" quota: every reservation plus the 100 Lambda keeps. */
  lambdaConcurrencyQuota: number;
  /** `mongodbConnectionBudget`: what the stage's containers can hold. */
  mongodbConnections: number;
  /** The smallest Atlas tier whose limit leaves the connections half of it (rolling restarts, other clients). */
  atlasTier: string;
  bedrockRequestsPerMinute: number;
  bedrockTokensPerMinute: number;
  apiThrottleRate: number;
  apiThrottleBurst: number;
}

/** The ceilings and quotas a stage needs for a rate of turns (docs/deploying.md, "Sizing"): Little's law and the connection plan. */
export function sizeFor(turnsPerSecond: number, profile: TurnProfile = DEFAULT_TURN_PROFILE): Sizing {
  const turnConcurrency = Math.ceil(turnsPerSecond * profile.turnSeconds * profile.headroom);
  const perContainer = FUNCTION_POOL_SIZES.worker + DEFAULT_MONGODB_REPLICA_SET_MEMBERS;
  const webhookContainers = 2 * DEFAULT_WEBHOOK_CONCURRENCY;
  const webhookConnections = webhookContainers * (FUNCTION_POOL_SIZES.slack + DEFAULT_MONGODB_REPLICA_SET_MEMBERS);
  const setup = FUNCTION_POOL_SIZES.setup + DEFAULT_MONGODB_REPLICA_SET_MEMBERS;
  const mongodbConnections = turnConcurrency * perContainer + webhookConnections + setup;
  const atlasTier = ATLAS_CONNECTION_LIMITS.find(([, limit]) => limit >= 2 * mongodbConnections)?.[0] ?? "M80 or sharded";
  const calls = turnsPerSecond * 60 * profile.modelCallsPerTurn;
  const rate = Math.max(DEFAULT_API_THROTTLE_RATE, Math.ceil(turnsPerSecond * profile.requestsPerTurn));
  return {
    turnsPerSecond,
    turnConcurrency,
    lambdaConcurrencyQuota: turnConcurrency + webhookContainers + 1 + UNRESERVED,
    mongodbConnections,
    atlasTier,
    bedrockRequestsPerMinute: calls,
    bedrockTokensPerMinute: calls * (profile.inputTokensPerCall + profile.outputTokensPerCall),
    apiThrottleRate: rate,
    apiThrottleBurst: Math.max(DEFAULT_API_THROTTLE_BURST, 2 * rate),
  };
}

/** The sizing table of docs/deploying.md, for these rates (`npx tsx scripts/sizing.ts`). */
export function sizingTable(rates: readonly number[] = [1, 10, 100]): string {
  const n = (v: number) => v.toLocaleString("en-US");
  const rows = rates
    .map((r) => sizeFor(r))
    .map((s) =>
      [
        n(s.turnsPerSecond),
        n(s.turnConcurrency),
        n(s.lambdaConcurrencyQuota),
        `${n(s.mongodbConnections)} (${s.atlasTier})`,
        n(s.bedrockRequestsPerMinute),
        n(s.bedrockTokensPerMinute),
        `${n(s.apiThrottleRate)} / ${n(s.apiThrottleBurst)}`,
      ].join(" | "),
    );
  return [
    "| turns/s | turns at once | Lambda quota | `mongodbConnectionBudget` (Atlas) | Bedrock requests/min | Bedrock tokens/min | API rate / burst |",
    "| --- | --- | --- | --- | --- | --- | --- |",
    ...rows.map((r) => `| ${r} |`),
  ].join("\n");
}
