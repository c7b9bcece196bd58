import type { ChannelHandler, ChannelHandlers } from "../channels/channel-handlers.js";
import { PayloadTooLargeError } from "../errors.js";
import { MAX_BODY_BYTES } from "./request-parsing.js";
import type { Route } from "./router.js";

const SLACK_PATH = /^\/slack\/events$/;
const TEAMS_PATH = /^\/teams\/messages$/;
const SLACK_INTERACTIVITY_PATH = /^\/slack\/interactivity$/;

/**
 * A body over the API's limit is refused before it is verified or parsed: parsing a deeply nested
 * body of Lambda's 6 MB costs most of a second, and no event Slack or Teams sends us comes near it.
 */
function routeOf(pattern: RegExp, handler: ChannelHandler): Route {
  return {
    method: "POST",
    pattern,
    handler: (request) => {
      const rawBody = request.body ?? "";
      if (Buffer.byteLength(rawBody, "utf8") > MAX_BODY_BYTES) throw new PayloadTooLargeError(`request body over ${MAX_BODY_BYTES} bytes`, MAX_BODY_BYTES);
      return handler({ headers: request.headers, rawBody });
    },
  };
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
