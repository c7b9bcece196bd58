import type { Config } from "../config/config.js";
import type { ChannelIngressCredentials } from "../config/credentials.js";
import type { StructuredLogger } from "../logger.js";
import type { EventDeduper } from "./channel-event-deduper.js";
import { type ChannelRequest, type ChannelResponse, channelNotConfiguredResponse } from "./channel-http.js";
import { handleSlackEvent, type SlackEventOutcome } from "./slack/handle-slack-event.js";
import { handleTeamsActivity, type TeamsActivityOutcome } from "./teams/handle-teams-activity.js";
import type { EnqueueTurn } from "../queue/turn-job.js";
import type { ChannelApprovals } from "./channel-decisions.js";
import { handleSlackInteraction, slackResponseUrlPrefix, type SlackInteractionOutcome } from "./slack/handle-slack-interaction.js";
import type { SlackViews } from "./slack/slack-approval-modal.js";

/**
 * The ingress of the channel side, assembled here once for the webhook functions and the local
 * server alike: verify, then dedupe and enqueue. Its other half, the worker that runs queued turns
 * and replies, is `channel-worker.ts`, kept apart so that neither bundle carries the other. The
 * HTTP routes over these handlers are the API's (`lib/api/channel-routes.ts`).
 */

/** Answers one webhook delivery. */
export type ChannelHandler = (request: ChannelRequest) => Promise<ChannelResponse>;

/** A handler per channel that has one: a configured channel's, or the 503 of `notConfigured`. */
export interface ChannelHandlers {
  slack?: ChannelHandler;
  /** Slack's approval button clicks and edit modals (`approvals` given). */
  slackInteractivity?: ChannelHandler;
  teams?: ChannelHandler;
}

export interface ChannelHandlersOptions {
  /** Verifies Slack deliveries when set. */
  slack?: {
    signingSecret: string;
    /** Default: the bot users named in each envelope's `authorizations`. */
    botUserId?: string;
  };
  /** Verifies Teams activities when set. */
  teams?: {
    appId: string;
    /** Default: the Bot Framework's metadata document. */
    openIdMetadataUrl?: string;
    /** Default: the Bot Framework's issuer. */
    issuer?: string;
    /** Where a stand-in Bot Connector serves (`TEAMS_SERVICE_URL_ORIGIN`). Default: Teams' own hosts only. */
    serviceUrlOrigin?: string;
  };
  /**
   * For a channel without credentials: its handler answers 503 `channel_not_configured` with this
   * hint (what to set), rather than a 404 that looks like a wrong URL. Default: no handler.
   */
  notConfigured?: { slack: string; teams: string };
  /**
   * Claims each event once. It is called only after the request is verified, so an unverified
   * request never reaches the database (a MongoClient connects on its first operation).
   */
  deduper: EventDeduper;
  enqueue: EnqueueTurn;
  /** Takes approval decisions from Slack buttons and Teams card actions when set. Default: neither is answered. */
  approvals?: ChannelApprovals;
  /** Opens Slack's edit modal and updates the message after an edit (the bot token's). Default: Edit answers that it is off. */
  slackViews?: SlackViews;
  /** Where Slack's `response_url`s must point. Default: `DEFAULT_SLACK_RESPONSE_URL_PREFIX`. */
  slackResponseUrlPrefix?: string;
  /** Default: silent. One line per delivery with its outcome (reasons and numbers, never text). */
  logger?: StructuredLogger;
}

/**
 * The webhook handlers, outside the API's JWT authentication: each request is verified by its
 * channel's own scheme, using nothing but the channel's keys, before anything else is done.
 */
export function channelHandlers(options: ChannelHandlersOptions): ChannelHandlers {
  const { slack, teams, notConfigured, logger } = options;
  const reportSlack = (outcome: SlackEventOutcome) => logger?.info("slack event", { ...outcome });
  const reportTeams = (outcome: TeamsActivityOutcome) => logger?.info("teams activity", { ...outcome });
  const handlers: ChannelHandlers = {};
  if (slack) {
    handlers.slack = (request) =>
      handleSlackEvent({
        request,
        signingSecret: slack.signingSecret,
        botUserId: slack.botUserId,
        deduper: options.deduper,
        enqueue: options.enqueue,
        onOutcome: reportSlack,
      });
    const approvals = options.approvals;
    if (approvals) {
      const reportInteraction = (outcome: SlackInteractionOutcome) => logger?.info("slack interaction", { ...outcome });
      handlers.slackInteractivity = (request) =>
        handleSlackInteraction({
          request,
          signingSecret: slack.signingSecret,
          approvals,
          views: options.slackViews,
          responseUrlPrefix: options.slackResponseUrlPrefix,
          onOutcome: reportInteraction,
        });
    }
  } else if (notConfigured) {
    handlers.slack = async () => channelNotConfiguredResponse("slack", notConfigured.slack);
  }
  if (teams) {
    handlers.teams = (request) =>
      handleTeamsActivity({
        request,
        appId: teams.appId,
        openIdMetadataUrl: teams.openIdMetadataUrl,
        issuer: teams.issuer,
        serviceUrlOrigin: teams.serviceUrlOrigin,
        deduper: options.deduper,
        enqueue: options.enqueue,
        approvals: options.approvals,
        onOutcome: reportTeams,
      });
  } else if (notConfigured) {
    handlers.teams = async () => channelNotConfiguredResponse("teams", notConfigured.teams);
  }
  return handlers;
}

/** What the webhooks are assembled from besides the settings: the keys they verify with and where verified events go. */
export type ChannelIngressParts = Pick<ChannelHandlersOptions, "deduper" | "enqueue" | "approvals" | "slackViews" | "logger"> & {
  /** The keys each channel verifies its requests with; a channel without them answers `notConfigured`'s hint. */
  ingress: ChannelIngressCredentials;
  /** What to set to turn a channel on, as the deployment says it (a secret's key in AWS, an environment variable locally). */
  notConfigured: { slack: string; teams: string };
};

/**
 * The webhooks' handlers as every deployment makes them (the slack and teams functions, the local
 * server): the channels' endpoints from the configuration, the keys and parts from the caller.
 */
export function channelHandlersFor(config: Pick<Config, "channels">, { ingress, ...parts }: ChannelIngressParts): ChannelHandlers {
  const { channels: endpoints } = config;
  return channelHandlers({
    ...parts,
    slack: ingress.slack && { signingSecret: ingress.slack.signingSecret },
    teams: ingress.teams && {
      appId: ingress.teams.appId,
      openIdMetadataUrl: endpoints.teamsOpenIdMetadataUrl,
      serviceUrlOrigin: endpoints.teamsServiceUrlOrigin,
    },
    slackResponseUrlPrefix: slackResponseUrlPrefix(endpoints.slackApiUrl),
  });
}
