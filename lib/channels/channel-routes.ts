import type { Route } from "../api/router.js";
import type { StructuredLogger } from "../logger.js";
import type { EventDeduper } from "./channel-event-deduper.js";
import { channelNotConfiguredResponse } from "./channel-http.js";
import { handleSlackEvent, type SlackEventOutcome } from "./slack/handle-slack-event.js";
import { handleTeamsActivity, type TeamsActivityOutcome } from "./teams/handle-teams-activity.js";
import type { EnqueueTurn } from "./turn-job.js";
import type { ChannelDecide } from "./channel-decisions.js";
import { handleSlackInteraction, type SlackInteractionOutcome } from "./slack/handle-slack-interaction.js";

/**
 * The ingress of the channel side, assembled here once for the webhook functions and the local
 * server alike: verify, then dedupe and enqueue. Its other half, the worker that runs queued turns
 * and replies, is `channel-worker.ts`, kept apart so that neither bundle carries the other.
 */

export interface ChannelRoutesOptions {
  /** Serves `POST /slack/events` when set. */
  slack?: {
    signingSecret: string;
    /** Default: the bot users named in each envelope's `authorizations`. */
    botUserId?: string;
  };
  /** Serves `POST /teams/messages` when set. */
  teams?: {
    appId: string;
    /** Default: the Bot Framework's metadata document. */
    openIdMetadataUrl?: string;
    /** Default: the Bot Framework's issuer. */
    issuer?: string;
  };
  /**
   * For a channel without credentials: the route answers 503 `channel_not_configured` with this
   * hint (what to set), rather than a 404 that looks like a wrong URL. Default: no route.
   */
  notConfigured?: { slack: string; teams: string };
  /**
   * Claims each event once. It is called only after the request is verified, so an unverified
   * request never reaches the database (a MongoClient connects on its first operation).
   */
  deduper: EventDeduper;
  enqueue: EnqueueTurn;
  /** Serves `POST /slack/interactivity` (approval buttons) and Teams approval card actions when set. Default: neither. */
  decide?: ChannelDecide;
  /** Where Slack's `response_url`s must point. Default: `DEFAULT_SLACK_RESPONSE_URL_PREFIX`. */
  slackResponseUrlPrefix?: string;
  /** Default: silent. One line per delivery with its outcome (reasons and numbers, never text). */
  logger?: StructuredLogger;
}

const SLACK_PATH = /^\/slack\/events$/;
const TEAMS_PATH = /^\/teams\/messages$/;
const SLACK_INTERACTIVITY_PATH = /^\/slack\/interactivity$/;

/**
 * The webhook routes, outside the API's JWT authentication: each request is verified by its
 * channel's own scheme, using nothing but the channel's keys, before anything else is done.
 */
export function channelRoutes(options: ChannelRoutesOptions): Route[] {
  const routes: Route[] = [];
  const { slack, teams, notConfigured, logger } = options;
  const reportSlack = (outcome: SlackEventOutcome) => logger?.info("slack event", { ...outcome });
  const reportTeams = (outcome: TeamsActivityOutcome) => logger?.info("teams activity", { ...outcome });
  if (slack) {
    routes.push({
      method: "POST",
      pattern: SLACK_PATH,
      handler: (request) =>
        handleSlackEvent({
          request: { headers: request.headers, rawBody: request.body ?? "" },
          signingSecret: slack.signingSecret,
          botUserId: slack.botUserId,
          deduper: options.deduper,
          enqueue: options.enqueue,
          onOutcome: reportSlack,
        }),
    });
    const decide = options.decide;
    if (decide) {
      const reportInteraction = (outcome: SlackInteractionOutcome) => logger?.info("slack interaction", { ...outcome });
      routes.push({
        method: "POST",
        pattern: SLACK_INTERACTIVITY_PATH,
        handler: (request) =>
          handleSlackInteraction({
            request: { headers: request.headers, rawBody: request.body ?? "" },
            signingSecret: slack.signingSecret,
            decide,
            responseUrlPrefix: options.slackResponseUrlPrefix,
            onOutcome: reportInteraction,
          }),
      });
    }
  } else if (notConfigured) {
    routes.push({ method: "POST", pattern: SLACK_PATH, handler: async () => channelNotConfiguredResponse("slack", notConfigured.slack) });
  }
  if (teams) {
    routes.push({
      method: "POST",
      pattern: TEAMS_PATH,
      handler: (request) =>
        handleTeamsActivity({
          request: { headers: request.headers, rawBody: request.body ?? "" },
          appId: teams.appId,
          openIdMetadataUrl: teams.openIdMetadataUrl,
          issuer: teams.issuer,
          deduper: options.deduper,
          enqueue: options.enqueue,
          decide: options.decide,
          onOutcome: reportTeams,
        }),
    });
  } else if (notConfigured) {
    routes.push({ method: "POST", pattern: TEAMS_PATH, handler: async () => channelNotConfiguredResponse("teams", notConfigured.teams) });
  }
  return routes;
}
