import middy from "@middy/core";
import { injectLambdaContext } from "@aws-lambda-powertools/logger/middleware";
import { logMetrics } from "@aws-lambda-powertools/metrics/middleware";
import type { Context } from "aws-lambda";
import { toHttpRequest, toResult, VerifiedClaims, type HttpApiEvent } from "./shared/http-event.js";
import { appFor, config, credentialsMiddleware, credentialsOf, logger, logServerError, metrics, publishTurnMetrics, turnQueue } from "./shared/runtime.js";

const claims = new VerifiedClaims(config.auth);

/** The HTTP API (every route of design.md) on API Gateway HTTP API events. */
async function api(event: HttpApiEvent, context: Context) {
  const app = await appFor(credentialsOf(context), {
    authenticate: claims.authenticate,
    turnQueue,
    onTurnCompleted: publishTurnMetrics,
    onError: logServerError,
  });
  const response = await app.route(claims.attach(toHttpRequest(event), event));
  logger.info("request", { route: event.routeKey, status: response.status });
  return toResult(response);
}

export const handler = middy(api).use(injectLambdaContext(logger)).use(logMetrics(metrics)).use(credentialsMiddleware());
