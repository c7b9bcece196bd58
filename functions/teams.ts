import middy from "@middy/core";
import { injectLambdaContext } from "@aws-lambda-powertools/logger/middleware";
import { logMetrics } from "@aws-lambda-powertools/metrics/middleware";
import type { Context } from "aws-lambda";
import { channelNotConfiguredResponse, decodeGatewayBody, handleTeamsActivity, lowercaseHeaders } from "../lib/channels/index.js";
import { channelCredentialsOf } from "../lib/config/credentials.js";
import { ValidationError } from "../lib/errors.js";
import { deduperFor } from "./shared/channel-clients.js";
import { toResult, type HttpApiEvent } from "./shared/http-event.js";
import { appFor, config, credentialsMiddleware, credentialsOf, logger, logServerError, metrics, requireTurnQueue } from "./shared/runtime.js";

const NO_API = async (): Promise<never> => {
  throw new ValidationError("the teams function serves only /teams/messages");
};

/** Bot Framework activities: verify the token, dedupe, enqueue; the worker replies through the Bot Connector. */
async function teams(event: HttpApiEvent, context: Context) {
  const credentials = credentialsOf(context);
  const teamsCredentials = channelCredentialsOf(credentials).teams;
  if (!teamsCredentials) return toResult(channelNotConfiguredResponse("teams", "add teamsAppId and teamsAppPassword to the credentials secret"));
  const app = await appFor(credentials, { authenticate: NO_API, onError: logServerError });
  const queue = requireTurnQueue();
  const response = await handleTeamsActivity({
    request: { headers: lowercaseHeaders(event.headers), rawBody: decodeGatewayBody(event) },
    appId: teamsCredentials.appId,
    openIdMetadataUrl: config.channels.teamsOpenIdMetadataUrl,
    deduper: await deduperFor(app),
    enqueue: (job) => queue.enqueue(job),
    onOutcome: (outcome) => logger.info("teams activity", { ...outcome }),
  });
  return toResult(response);
}

export const handler = middy(teams).use(injectLambdaContext(logger)).use(logMetrics(metrics)).use(credentialsMiddleware());
