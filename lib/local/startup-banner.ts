import type { ApprovalsConfig } from "../config/approvals-config.js";
import type { RecallConfig } from "../config/recall-config.js";
import { printableMongoUri } from "./startup-error.js";

/** What the local server prints once it listens: where it is, and what it runs with. */
export interface BannerFacts {
  url: string;
  mongodbUri: string;
  /** Whether the MongoDB is the embedded one (no `MONGODB_URI`), whose data lives in memory. */
  embedded: boolean;
  provider: string;
  /** The model the provider calls (none for the offline model). */
  model?: string;
  tools: readonly string[];
  /** Tool name to roles (`TOOL_ROLES`); a tool not listed is open to everyone. */
  toolRoles: Readonly<Record<string, readonly string[]>>;
  approvals: ApprovalsConfig;
  recall: Pick<RecallConfig, "embeddingsModelId">;
  channels: { slack: boolean; teams: boolean };
}

/** The approval line's example: the one tool the sample set has that changes things. */
const APPROVALS_EXAMPLE = `TOOL_APPROVALS='{"create_follow_up":{"require":"always"}}'`;

function approvalsLine(approvals: ApprovalsConfig): string {
  const waiting = Object.entries(approvals.tools).filter(([, policy]) => policy.require !== "never");
  if (waiting.length === 0) return `approvals off: no tool call waits (${APPROVALS_EXAMPLE} npm start turns them on)`;
  const hours = Math.round((approvals.ttlSeconds / 3_600) * 10) / 10;
  const each = waiting.map(([tool, policy]) => `${tool} (${policy.require === "always" ? "always" : "when its arguments match"})`);
  return `approvals on: ${each.join(", ")} wait for a person, at most ${hours} h`;
}

/** The local server's start-up lines, one fact each. */
export function startupBanner(facts: BannerFacts): string[] {
  const restricted = facts.tools.filter((tool) => facts.toolRoles[tool] !== undefined);
  return [
    `threadwise listening on ${facts.url}`,
    `console at ${facts.url}/`,
    facts.embedded
      ? `mongodb ${printableMongoUri(facts.mongodbUri)} (embedded, in memory: conversations are lost when it stops; set MONGODB_URI to keep them)`
      : `mongodb ${printableMongoUri(facts.mongodbUri)}`,
    facts.model ? `model provider ${facts.provider}: ${facts.model}` : `model provider ${facts.provider}`,
    `tools ${facts.tools.join(", ")}${restricted.length > 0 ? ` (by role: ${restricted.join(", ")})` : ""}`,
    approvalsLine(facts.approvals),
    facts.recall.embeddingsModelId
      ? `recall search_conversation: lexical and embeddings (${facts.recall.embeddingsModelId})`
      : "recall search_conversation: lexical (set RECALL_EMBEDDINGS_MODEL_ID for embeddings too)",
    `slack ${facts.channels.slack ? `on: POST ${facts.url}/slack/events` : "off (set SLACK_SIGNING_SECRET and SLACK_BOT_TOKEN)"}`,
    `teams ${facts.channels.teams ? `on: POST ${facts.url}/teams/messages` : "off (set TEAMS_APP_ID and TEAMS_APP_PASSWORD)"}`,
    "get a token with: npm run token -- <user> [--tenant <tenant>]",
  ];
}
