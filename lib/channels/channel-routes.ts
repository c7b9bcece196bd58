import type { Route } from "../api/router.js";
import type { EventDeduper } from "./channel-event-deduper.js";
import { handleSlackEvent, type SlackEventOutcome } from "./slack/handle-slack-event.js";
import { handleTeamsActivity, type TeamsActivityOutcome } from "./teams/handle-teams-activity.js";
import type { EnqueueTurn } from "./turn-job.js";

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
  deduper: EventDeduper;
  enqueue: EnqueueTurn;
  onSlackOutcome?: (outcome: SlackEventOutcome) => void;
  onTeamsOutcome?: (outcome: TeamsActivityOutcome) => void;
}

/**
 * The webhook routes for the router the local server and the Lambda handlers share. They sit
 * outside the API's JWT authentication: each request is verified by its channel's own scheme.
 */
export function channelRoutes(options: ChannelRoutesOptions): Route[] {
  const routes: Route[] = [];
  const { slack, teams } = options;
  if (slack) {
    routes.push({
      method: "POST",
      pattern: /^\/slack\/events$/,
      handler: (request) =>
        handleSlackEvent({
          request: { headers: request.headers, rawBody: request.body ?? "" },
          signingSecret: slack.signingSecret,
          botUserId: slack.botUserId,
          deduper: options.deduper,
          enqueue: options.enqueue,
          onOutcome: options.onSlackOutcome,
        }),
    });
  }
  if (teams) {
    routes.push({
      method: "POST",
      pattern: /^\/teams\/messages$/,
      handler: (request) =>
        handleTeamsActivity({
          request: { headers: request.headers, rawBody: request.body ?? "" },
          appId: teams.appId,
          openIdMetadataUrl: teams.openIdMetadataUrl,
          issuer: teams.issuer,
          deduper: options.deduper,
          enqueue: options.enqueue,
          onOutcome: options.onTeamsOutcome,
        }),
    });
  }
  return routes;
}
