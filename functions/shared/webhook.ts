import type { Context } from "aws-lambda";
import { errorResponse } from "../../lib/api/error-response.js";
import { channelRoutes } from "../../lib/api/channel-routes.js";
import { createRouter } from "../../lib/api/router.js";
import { ChannelEventDeduper, type EventDeduper } from "../../lib/channels/channel-event-deduper.js";
import { channelHandlersFor } from "../../lib/channels/channel-handlers.js";
import { webhookChannelDecisions, type ChannelApprovals } from "../../lib/channels/channel-decisions.js";
import { slackViews, type SlackViews } from "../../lib/channels/slack/slack-approval-modal.js";
import { createGroupDirectories } from "../../lib/channels/group-directories.js";
import { channelIngressCredentialsOf, channelReplyCredentialsOf, type Credentials } from "../../lib/config/credentials.js";
import type { GroupDirectory } from "../../lib/auth/channel-roles.js";
import { toHttpRequest, toResult, type HttpApiEvent } from "./http-event.js";
import type { TurnJob } from "../../lib/queue/turn-job.js";
import { config, credentialsOf, logger, logServerError, mongoClientFor, publishWebhookStatus, requireTurnQueue } from "./runtime.js";

/** What to fill in, said by a webhook whose channel has no key yet (docs/deploying.md, "The credentials secrets"). */
const AWS_CHANNEL_HINTS = {
  slack: "set slackSigningSecret in the slack-signing credentials secret",
  teams: "set teamsAppId in the teams-bot credentials secret",
};

const dedupers = new WeakMap<object, ChannelEventDeduper>();

/**
 * Claims events in the container's MongoClient, made on the first claim: the routes call it only
 * for a verified request, so a refused one never touches MongoDB. Its TTL index is the deploy
 * step's, not made here.
 */
function deduperOf(credentials: Credentials): EventDeduper {
  const current = () => {
    const client = mongoClientFor(credentials);
    let deduper = dedupers.get(client);
    if (!deduper) dedupers.set(client, (deduper = new ChannelEventDeduper(client.db(config.dbName))));
    return deduper;
  };
  return {
    claim: (eventId, now) => current().claim(eventId, now),
    confirm: (eventId) => current().confirm(eventId),
    release: (eventId) => current().release(eventId),
  };
}

/** The channel's group directory holds a token and a membership cache: one per container and credentials version. */
let directory: { key: string; directories: Partial<Record<"slack" | "teams", GroupDirectory>> } | undefined;

/** Only the webhook's own channel: an approver's roles by group are looked up where the click came in. */
function directoriesOf(channel: "slack" | "teams", credentials: Credentials): Partial<Record<"slack" | "teams", GroupDirectory>> {
  const replies = channelReplyCredentialsOf(credentials, channel);
  const key = JSON.stringify(replies[channel] ?? null);
  if (directory?.key !== key) {
    const own = createGroupDirectories({ [channel]: replies[channel] }, config.channels)[channel];
    directory = { key, directories: own ? { [channel]: own } : {} };
  }
  return directory.directories;
}

/** Approvals over the container's MongoClient, made on the first verified interaction (a refused request never touches MongoDB). */
function approvalsOf(channel: "slack" | "teams", credentials: Credentials): ChannelApprovals {
  const current = () =>
    webhookChannelDecisions(
      mongoClientFor(credentials).db(config.dbName),
      config,
      (job: TurnJob) => requireTurnQueue().enqueue(job),
      directoriesOf(channel, credentials),
    );
  return { decide: (...args) => current().decide(...args), forDecision: (...args) => current().forDecision(...args) };
}

/** Slack's edit modal needs the bot token (channel-replies secret); one client per container and token. */
let views: { token: string; views: SlackViews } | undefined;
function slackViewsOf(credentials: Credentials): SlackViews | undefined {
  const token = channelReplyCredentialsOf(credentials, "slack").slack?.botToken;
  if (!token) return undefined;
  if (views?.token !== token) views = { token, views: slackViews({ botToken: token, slackApiUrl: config.channels.slackApiUrl }) };
  return views.views;
}

/**
 * A webhook function: verifies the request with the channel's key alone, then claims and enqueues
 * it. It builds neither the app nor the graph, and loads no tool.
 */
export function webhook(channel: "slack" | "teams") {
  return async (event: HttpApiEvent, context: Context) => {
    logger.setCorrelationId(event.requestContext.requestId);
    const request = toHttpRequest(event);
    let response;
    try {
      const credentials = credentialsOf(context);
      const handlers = channelHandlersFor(config, {
        // Only the webhook's own channel: the other answers that it is not configured here.
        ingress: { [channel]: channelIngressCredentialsOf(credentials)[channel] },
        notConfigured: AWS_CHANNEL_HINTS,
        deduper: deduperOf(credentials),
        enqueue: (job) => requireTurnQueue().enqueue(job),
        approvals: approvalsOf(channel, credentials),
        slackViews: channel === "slack" ? slackViewsOf(credentials) : undefined,
        logger,
      });
      const route = createRouter(channelRoutes(handlers), logServerError);
      response = await route(request);
    } catch (error) {
      logServerError(error, request);
      response = errorResponse(error);
    }
    publishWebhookStatus(channel, response.status);
    return toResult(response);
  };
}
