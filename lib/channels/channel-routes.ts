import type { TurnRunner } from "../agent/turn-runner.js";
import type { Route } from "../api/router.js";
import type { ChannelEndpointsConfig } from "../config/config.js";
import type { ChannelReplyCredentials } from "../config/credentials.js";
import type { StructuredLogger } from "../logger.js";
import { TurnJobWorker } from "../queue/turn-job-worker.js";
import type { TurnMetricsSink } from "../queue/turn-metrics.js";
import type { ConversationStore } from "../store/conversation-store.js";
import type { TurnStore } from "../store/turn-store.js";
import type { EventDeduper } from "./channel-event-deduper.js";
import { channelNotConfiguredResponse } from "./channel-http.js";
import { createChannelReplier } from "./channel-replier.js";
import { handleSlackEvent, type SlackEventOutcome } from "./slack/handle-slack-event.js";
import { handleTeamsActivity, type TeamsActivityOutcome } from "./teams/handle-teams-activity.js";
import type { EnqueueTurn } from "./turn-job.js";

/**
 * The channel side of Threadwise, assembled here once for the Lambda functions and the local
 * server alike: the webhook routes (verify, then dedupe and enqueue) and the worker that runs
 * queued turns and replies in the channel.
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
  /** Default: silent. One line per delivery with its outcome (reasons and numbers, never text). */
  logger?: StructuredLogger;
}

const SLACK_PATH = /^\/slack\/events$/;
const TEAMS_PATH = /^\/teams\/messages$/;

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
          onOutcome: reportTeams,
        }),
    });
  } else if (notConfigured) {
    routes.push({ method: "POST", pattern: TEAMS_PATH, handler: async () => channelNotConfiguredResponse("teams", notConfigured.teams) });
  }
  return routes;
}

export interface ChannelWorkerOptions {
  /** The app's turn runner and stores (`createApp`). */
  app: { runner: TurnRunner; database: { conversations: ConversationStore; turns: TurnStore } };
  /** The channels it can answer in; a job from another is told nothing and given up. */
  replies: ChannelReplyCredentials;
  endpoints: ChannelEndpointsConfig;
  maxReceives: number;
  maxMessageChars: number;
  onTurnCompleted?: TurnMetricsSink;
}

/**
 * The worker of queued turns (the worker function's logic, and the local server's in-process
 * queue). Its repliers hold HTTP clients and a token cache: make it once per container and
 * credentials version, not per turn.
 */
export function channelWorker(options: ChannelWorkerOptions): TurnJobWorker {
  return new TurnJobWorker({
    runner: options.app.runner,
    conversations: options.app.database.conversations,
    turns: options.app.database.turns,
    replier: createChannelReplier(options.replies, options.endpoints),
    maxReceives: options.maxReceives,
    maxMessageChars: options.maxMessageChars,
    onTurnCompleted: options.onTurnCompleted,
  });
}
