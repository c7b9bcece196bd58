import { distance } from "fastest-levenshtein";
import { OTHER_VARIABLES } from "./config-table.js";
import { SECRET_ARN_SETTINGS } from "./deployment-config.js";
import { SETTINGS } from "./config.js";
import { LIFECYCLE_SETTINGS } from "./lifecycle-config.js";
import { MCP_OAUTH_SETTINGS } from "./mcp-oauth-config.js";
import { ENCRYPTION_SETTINGS } from "./encryption-config.js";
import { MCP_SETTINGS } from "./mcp-servers-config.js";
import { RECALL_SETTINGS } from "./recall-config.js";
import { TRACING_SETTINGS } from "./tracing-config.js";
import { TOOL_SETTINGS } from "./tools-config.js";

/**
 * The prefixes of this product's settings: a variable that starts with one and is no setting is
 * most likely a misspelt one (`TOOL_APPROVAL`, `MONGO_URI`), so it is named even when no setting
 * is close.
 */
export const SETTING_PREFIXES = [
  "MODEL_",
  "MONGO",
  "TOOL_",
  "VIEW_",
  "SLACK_",
  "TEAMS_",
  "BEDROCK_",
  "RECALL_",
  "SQL_",
  "APPROVAL_",
  "OPENAI_",
  "MCP_",
  "TRACING_",
  "AUDIT_",
] as const;

/** Variables with those prefixes that other software reads (mongodb-memory-server's), never a typo of ours. */
const FOREIGN = [/^MONGOMS_/];

/** The most edits (insertions, deletions, substitutions) between a variable and the setting it is taken for. */
const MAX_EDITS_LONG = 2;
/** Names this short (or shorter) get one edit only: two would match unrelated short names. */
const SHORT_NAME = 6;

/** Every variable the product reads: the settings, the secret ARNs, and the ones read as credentials or by the AWS SDK. */
export const SETTING_NAMES: readonly string[] = Object.keys({
  ...SETTINGS,
  ...TOOL_SETTINGS,
  ...RECALL_SETTINGS,
  ...MCP_OAUTH_SETTINGS,
  ...LIFECYCLE_SETTINGS,
  ...ENCRYPTION_SETTINGS,
  ...MCP_SETTINGS,
  ...TRACING_SETTINGS,
  ...SECRET_ARN_SETTINGS,
  ...OTHER_VARIABLES,
});

/** The setting a name is most likely meant to be, when one is within a small edit distance. */
export function likelySetting(name: string, known: readonly string[] = SETTING_NAMES): string | undefined {
  const allowed = name.length <= SHORT_NAME ? 1 : MAX_EDITS_LONG;
  let best: { name: string; edits: number } | undefined;
  for (const candidate of known) {
    const edits = distance(name, candidate);
    if (edits <= allowed && (!best || edits < best.edits)) best = { name: candidate, edits };
  }
  // A prefix of a setting, or a setting with a prefix dropped (`MONGO_URI` for `MONGODB_URI`), is a near miss too.
  return best?.name ?? known.find((candidate) => sameWords(name, candidate));
}

/** Whether two names differ only in their first word's spelling (`MONGO_URI`, `MONGODB_URI`) or a trailing S. */
function sameWords(a: string, b: string): boolean {
  const [headA, ...restA] = a.split("_");
  const [headB, ...restB] = b.split("_");
  if (restA.length === 0 || restA.join("_") !== restB.join("_")) return false;
  return (headA ?? "").length >= 3 && (headB ?? "").startsWith(headA ?? "");
}

/**
 * One line per environment variable that is no setting but looks like one: within a small edit
 * distance of a setting ("MODEL_PROVDER is not a setting; did you mean MODEL_PROVIDER?"), or
 * carrying a settings prefix. A variable that is a setting, or looks like none, gets no line.
 */
export function settingNameWarnings(env: Record<string, string | undefined>, known: readonly string[] = SETTING_NAMES): string[] {
  const names = new Set(known);
  const warnings: string[] = [];
  for (const name of Object.keys(env).sort()) {
    if (names.has(name) || FOREIGN.some((pattern) => pattern.test(name))) continue;
    const meant = likelySetting(name, known);
    if (meant) warnings.push(`${name} is not a setting; did you mean ${meant}?`);
    else {
      const prefix = SETTING_PREFIXES.find((p) => name.startsWith(p));
      if (prefix) {
        const family = known.filter((candidate) => candidate.startsWith(prefix));
        warnings.push(`${name} is not a setting and is ignored (the ${prefix}… settings: ${family.join(", ") || "none"}).`);
      }
    }
  }
  return warnings;
}
