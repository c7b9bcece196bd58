export {
  ChannelEventDeduper,
  DEFAULT_CHANNEL_EVENT_IN_FLIGHT_SECONDS,
  DEFAULT_CHANNEL_EVENT_TTL_SECONDS,
  type ChannelEventDeduperOptions,
  type ChannelEventDocument,
  type EventClaim,
  type EventDeduper,
} from "./channel-event-deduper.js";
export {
  channelNotConfiguredResponse,
  emptyResponse,
  jsonResponse,
  type ChannelRequest,
  type ChannelResponse,
} from "./channel-http.js";
export { ChannelReplier, createChannelReplier, type ChannelRepliers } from "./channel-replier.js";
export {
  channelHandlers,
  channelHandlersFor,
  type ChannelHandler,
  type ChannelHandlers,
  type ChannelHandlersOptions,
  type ChannelIngressParts,
} from "./channel-handlers.js";
export { channelWorker, channelWorkerFor, type ChannelWorkerConfig, type ChannelWorkerOptions } from "./channel-worker.js";
export { createGroupDirectories } from "./group-directories.js";
export { DEFAULT_GROUP_CACHE_ENTRIES, DEFAULT_GROUP_CACHE_MS, GroupMembershipCache } from "./group-membership-cache.js";
export { turnFailureMessage } from "./failure-message.js";
export { splitText } from "./split-text.js";

export { handleSlackEvent, type HandleSlackEventInput, type SlackEventOutcome } from "./slack/handle-slack-event.js";
export {
  SLACK_IGNORE_REASONS,
  SLACK_USER_TEXT_SUBTYPES,
  parseSlackEvent,
  slackTurnJob,
  stripSlackMention,
  type ParseSlackEventOptions,
  type SlackDelivery,
  type SlackIgnoreReason,
  type SlackUserMessage,
} from "./slack/slack-event.js";
export {
  DEFAULT_SLACK_API_URL,
  DEFAULT_SLACK_MAX_MESSAGE_CHARS,
  DEFAULT_SLACK_RETRIES,
  DEFAULT_SLACK_TIMEOUT_MS,
  SLACK_TRANSIENT_ERRORS,
  SlackReplier,
  slackWebClient,
  type SlackBotIdentity,
  type SlackReplierOptions,
} from "./slack/slack-replier.js";
export { SlackGroupDirectory } from "./slack/slack-group-directory.js";
export {
  DEFAULT_SLACK_MAX_SKEW_SECONDS,
  computeSlackSignature,
  verifySlackRequest,
  type VerifySlackRequestInput,
} from "./slack/verify-slack-request.js";

export {
  BotConnectorTokenProvider,
  DEFAULT_BOT_CONNECTOR_SCOPE,
  DEFAULT_BOT_CONNECTOR_TENANT,
  DEFAULT_BOT_CONNECTOR_TOKEN_URL,
  DEFAULT_TOKEN_REFRESH_MARGIN_MS,
  DEFAULT_TOKEN_TIMEOUT_MS,
  type BotConnectorTokenProviderOptions,
} from "./teams/bot-connector-token-provider.js";
export {
  DEFAULT_GRAPH_SCOPE,
  DEFAULT_GRAPH_URL,
  EntraGroupDirectory,
  GRAPH_MAX_GROUPS_PER_CHECK,
  type EntraGroupDirectoryOptions,
} from "./teams/entra-group-directory.js";
export {
  handleTeamsActivity,
  type HandleTeamsActivityInput,
  type TeamsActivityOutcome,
} from "./teams/handle-teams-activity.js";
export {
  TEAMS_IGNORE_REASONS,
  parseTeamsActivity,
  stripTeamsMention,
  teamsTurnJob,
  type TeamsActivity,
  type TeamsDelivery,
  type TeamsIgnoreReason,
  type TeamsUserMessage,
} from "./teams/teams-activity.js";
export {
  DEFAULT_BOT_CONNECTOR_TIMEOUT_MS,
  DEFAULT_TEAMS_MAX_MESSAGE_CHARS,
  TeamsReplier,
  type TeamsReplierOptions,
} from "./teams/teams-replier.js";
export {
  DEFAULT_BOT_FRAMEWORK_CLOCK_TOLERANCE_SECONDS,
  DEFAULT_BOT_FRAMEWORK_ISSUER,
  DEFAULT_BOT_FRAMEWORK_OPENID_METADATA_URL,
  verifyBotFrameworkRequest,
  type VerifyBotFrameworkRequestInput,
} from "./teams/verify-bot-framework-request.js";
