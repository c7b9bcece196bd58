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
  /** Where it is called: the OpenAI-compatible server's base URL (`OPENAI_BASE_URL`). */
  baseUrl?: string;
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

/** The model settings the banner names, as `loadConfig` gives them (`config.model`). */
export interface BannerModelSettings {
  provider: string;
  bedrockModelId: string;
  openAiCompatible?: { baseUrl: string; model: string };
}

/** Which model the provider calls, and where: Bedrock's model id, or the OpenAI-compatible server's model and base URL. */
export function modelFacts(model: BannerModelSettings): Pick<BannerFacts, "provider" | "model" | "baseUrl"> {
  if (model.provider === "bedrock") return { provider: model.provider, model: model.bedrockModelId };
  if (model.openAiCompatible) return { provider: model.provider, model: model.openAiCompatible.model, baseUrl: model.openAiCompatible.baseUrl };
  return { provider: model.provider };
}

/** A URL as the banner prints it: without credentials or query, which can carry a key. */
function printableUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return "(not a URL)";
  }
}

function modelLine(facts: BannerFacts): string {
  if (!facts.model) return `model provider ${facts.provider}`;
  return `model provider ${facts.provider}: ${facts.model}${facts.baseUrl ? ` at ${printableUrl(facts.baseUrl)}` : ""}`;
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
    modelLine(facts),
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
