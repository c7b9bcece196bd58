import { z } from "zod";
import { parseOrThrow } from "../validation.js";
import { envSchemaOf, setting, withDefaults } from "./settings.js";

/** Where the channels' services are, defined once (see `settings.ts`); each default is the constant its client cites. */
export const CHANNEL_SETTINGS = {
  SLACK_API_URL: setting({
    schema: z.string().url(),
    defaultText: "`https://slack.com/api/`",
    description: "Slack Web API base URL; tests and local tries point it at a stand-in",
  }),
  TEAMS_OPENID_METADATA_URL: setting({
    schema: z.string().url(),
    defaultText: "the Bot Framework's",
    description: "OpenID metadata naming the keys that sign Bot Framework requests",
  }),
  TEAMS_TOKEN_URL: setting({
    schema: z.string().url(),
    defaultText: "`https://login.microsoftonline.com/{tenant}/oauth2/v2.0/token`",
    description: "client-credentials token endpoint for Bot Connector replies",
  }),
  TEAMS_SERVICE_URL_ORIGIN: setting({
    schema: z.string().url(),
    defaultText: "Teams' Bot Connector hosts (`DEFAULT_TEAMS_SERVICE_HOSTS`)",
    description:
      "the only origin an activity's `serviceUrl` may name instead of Teams' own; tests and local tries set a stand-in's " +
      "([security.md](security.md#trust-boundaries-and-the-tests-that-hold-them))",
  }),
  TEAMS_GRAPH_URL: setting({
    schema: z.string().url(),
    defaultText: "`https://graph.microsoft.com/v1.0/`",
    description: "Microsoft Graph, for the Entra group memberships and guest checks of `TEAMS_ROLES`",
  }),
};

const envSchema = envSchemaOf(CHANNEL_SETTINGS);

/**
 * Where the channels' services are, when not at Slack and Microsoft: tests and local tries point
 * them at local stand-ins. Channel secrets are credentials (`lib/config/credentials.ts`), not here.
 * The defaults are in lib/channels, beside the clients that apply them.
 */
export interface ChannelEndpointsConfig {
  /** Slack Web API base URL. Default: `DEFAULT_SLACK_API_URL` (lib/channels/slack/slack-replier.ts). */
  slackApiUrl?: string;
  /**
   * OpenID metadata naming the keys that sign Bot Framework requests. Default:
   * `DEFAULT_BOT_FRAMEWORK_OPENID_METADATA_URL` (lib/channels/teams/verify-bot-framework-request.ts).
   */
  teamsOpenIdMetadataUrl?: string;
  /** Client-credentials token URL; `{tenant}` is replaced. Default: `DEFAULT_BOT_CONNECTOR_TOKEN_URL` (lib/channels/teams/bot-connector-token-provider.ts). */
  teamsTokenUrl?: string;
  /** Microsoft Graph base URL, for Entra group roles. Default: `DEFAULT_GRAPH_URL` (lib/channels/teams/entra-group-directory.ts). */
  teamsGraphUrl?: string;
  /**
   * The origin of a stand-in Bot Connector, the only one a `serviceUrl` may then name. Default:
   * Teams' hosts (`DEFAULT_TEAMS_SERVICE_HOSTS`, lib/channels/teams/teams-identity.ts).
   */
  teamsServiceUrlOrigin?: string;
}

export function loadChannelEndpointsConfig(env: Record<string, string | undefined>): ChannelEndpointsConfig {
  const e = withDefaults(CHANNEL_SETTINGS, parseOrThrow(envSchema, env, "invalid configuration"));
  return {
    slackApiUrl: e.SLACK_API_URL,
    teamsOpenIdMetadataUrl: e.TEAMS_OPENID_METADATA_URL,
    teamsTokenUrl: e.TEAMS_TOKEN_URL,
    teamsGraphUrl: e.TEAMS_GRAPH_URL,
    teamsServiceUrlOrigin: e.TEAMS_SERVICE_URL_ORIGIN === undefined ? undefined : new URL(e.TEAMS_SERVICE_URL_ORIGIN).origin,
  };
}
