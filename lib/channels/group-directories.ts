import type { GroupDirectory } from "../auth/channel-roles.js";
import type { ChannelIssuerKind } from "../auth/principal.js";
import type { ChannelEndpointsConfig } from "../config/channels-config.js";
import type { ChannelReplyCredentials } from "../config/credentials.js";
import { SlackGroupDirectory } from "./slack/slack-group-directory.js";
import { slackWebClient } from "./slack/slack-replier.js";
import { EntraGroupDirectory } from "./teams/entra-group-directory.js";

/** The group directories of the connected channels, for `ChannelRoles`: made once per container and credentials version. */
export function createGroupDirectories(
  channels: ChannelReplyCredentials,
  endpoints: ChannelEndpointsConfig = {},
): Partial<Record<ChannelIssuerKind, GroupDirectory>> {
  const { slack, teams } = channels;
  return {
    ...(slack ? { slack: new SlackGroupDirectory(slackWebClient({ botToken: slack.botToken, slackApiUrl: endpoints.slackApiUrl })) } : {}),
    ...(teams
      ? {
          teams: new EntraGroupDirectory({
            appId: teams.appId,
            appPassword: teams.appPassword,
            tokenUrl: endpoints.teamsTokenUrl,
            graphUrl: endpoints.teamsGraphUrl,
          }),
        }
      : {}),
  };
}
