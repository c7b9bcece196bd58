import type { ChannelHandler, ChannelHandlers } from "../channels/channel-handlers.js";
import type { Route } from "./router.js";

const SLACK_PATH = /^\/slack\/events$/;
const TEAMS_PATH = /^\/teams\/messages$/;
const SLACK_INTERACTIVITY_PATH = /^\/slack\/interactivity$/;

function routeOf(pattern: RegExp, handler: ChannelHandler): Route {
  return { method: "POST", pattern, handler: (request) => handler({ headers: request.headers, rawBody: request.body ?? "" }) };
}

/**
 * `POST /slack/events`, `POST /slack/interactivity` and `POST /teams/messages` for the channels that have a handler; a channel without one has no
 * route (404).
 */
export function channelRoutes(handlers: ChannelHandlers): Route[] {
  const routes: Route[] = [];
  if (handlers.slack) routes.push(routeOf(SLACK_PATH, handlers.slack));
  if (handlers.slackInteractivity) routes.push(routeOf(SLACK_INTERACTIVITY_PATH, handlers.slackInteractivity));
  if (handlers.teams) routes.push(routeOf(TEAMS_PATH, handlers.teams));
  return routes;
}
