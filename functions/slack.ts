import middy from "@middy/core";
import { injectLambdaContext } from "@aws-lambda-powertools/logger/middleware";
import { logMetrics } from "@aws-lambda-powertools/metrics/middleware";
import type { Context } from "aws-lambda";
import { channelNotConfiguredResponse, decodeGatewayBody, handleSlackEvent, lowercaseHeaders } from "../lib/channels/index.js";
import { channelCredentialsOf } from "../lib/config/credentials.js";
import { ValidationError } from "../lib/errors.js";
import { deduperFor } from "./shared/channel-clients.js";
import { toResult, type HttpApiEvent } from "./shared/http-event.js";
import { appFor, credentialsMiddleware, credentialsOf, logger, logServerError, metrics, requireTurnQueue } from "./shared/runtime.js";

const NO_API = async (): Promise<never> => {
  throw new ValidationError("the slack function serves only /slack/events");
};

/** Slack Events API: verify the signature, dedupe, enqueue, answer within Slack's three seconds. */
async function slack(event: HttpApiEvent, context: Context) {
  const credentials = credentialsOf(context);
  const slackCredentials = channelCredentialsOf(credentials).slack;
  if (!slackCredentials) return toResult(channelNotConfiguredResponse("slack", "add slackSigningSecret and slackBotToken to the credentials secret"));
  const app = await appFor(credentials, { authenticate: NO_API, onError: logServerError });
  const queue = requireTurnQueue();
  const response = await handleSlackEvent({
    request: { headers: lowercaseHeaders(event.headers), rawBody: decodeGatewayBody(event) },
    signingSecret: slackCredentials.signingSecret,
    deduper: await deduperFor(app),
    enqueue: (job) => queue.enqueue(job),
    onOutcome: (outcome) => logger.info("slack event", { ...outcome }),
  });
  return toResult(response);
}

export const handler = middy(slack).use(injectLambdaContext(logger)).use(logMetrics(metrics)).use(credentialsMiddleware());
