import { ValidationError } from "../errors.js";
import { SECRET_ARN_SETTINGS } from "./deployment-config.js";
import { SETTINGS } from "./config.js";
import { LIFECYCLE_SETTINGS } from "./lifecycle-config.js";
import { MCP_OAUTH_SETTINGS } from "./mcp-oauth-config.js";
import { ENCRYPTION_SETTINGS } from "./encryption-config.js";
import { MCP_SETTINGS } from "./mcp-servers-config.js";
import { RECALL_SETTINGS } from "./recall-config.js";
import { TRACING_SETTINGS } from "./tracing-config.js";
import { TOOL_SETTINGS } from "./tools-config.js";
import { configTable, type DocumentedVariable } from "./settings.js";

/** Markers around the generated table in docs/configuration.md; the text between them is replaced whole. */
export const CONFIG_TABLE_START = "<!-- config-table:start -->";
export const CONFIG_TABLE_END = "<!-- config-table:end -->";

/** Read outside the settings: by the AWS SDK, or as credentials in local mode (`lib/config/credentials.ts`). */
export const OTHER_VARIABLES: Record<string, DocumentedVariable> = {
  AWS_ENDPOINT_URL_BEDROCK_RUNTIME: { defaultText: "AWS", description: "the standard SDK variable; tests point it at a local Converse endpoint" },
  SLACK_SIGNING_SECRET: { defaultText: "unset (Slack off)", description: "local mode only: the Slack app's signing secret (in AWS it is in the secret)" },
  SLACK_BOT_TOKEN: { defaultText: "unset (Slack off)", description: "local mode only: the Slack app's bot token (in AWS it is in the secret)" },
  TEAMS_APP_ID: { defaultText: "unset (Teams off)", description: "local mode only: the bot's app id (in AWS it is in the secret)" },
  TEAMS_APP_PASSWORD: { defaultText: "unset (Teams off)", description: "local mode only: the bot's app password (in AWS it is in the secret)" },
  TEAMS_TENANT_ID: { defaultText: "unset (Teams off)", description: "local mode only: the bot's Entra tenant (in AWS it is in the secret)" },
};

/** The configuration table of docs/configuration.md, generated from the settings. */
export function readmeConfigTable(): string {
  return configTable({
    ...SETTINGS,
    ...TOOL_SETTINGS,
    ...RECALL_SETTINGS,
    ...MCP_SETTINGS,
    ...MCP_OAUTH_SETTINGS,
    ...LIFECYCLE_SETTINGS,
    ...ENCRYPTION_SETTINGS,
    ...TRACING_SETTINGS,
    ...SECRET_ARN_SETTINGS,
    ...OTHER_VARIABLES,
  });
}

/** The page with the text between the markers replaced by the generated table. */
export function withConfigTable(readme: string): string {
  const start = readme.indexOf(CONFIG_TABLE_START);
  const end = readme.indexOf(CONFIG_TABLE_END);
  if (start < 0 || end < start)
    throw new ValidationError("the page has no configuration table markers", [
      { path: "docs/configuration.md", message: `${CONFIG_TABLE_START} … ${CONFIG_TABLE_END} not found` },
    ]);
  return `${readme.slice(0, start + CONFIG_TABLE_START.length)}\n${readmeConfigTable()}\n${readme.slice(end)}`;
}
