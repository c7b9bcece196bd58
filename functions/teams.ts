import middy from "@middy/core";
import { injectLambdaContext } from "@aws-lambda-powertools/logger/middleware";
import { logMetrics } from "@aws-lambda-powertools/metrics/middleware";
import { credentialsMiddleware, logger, metrics } from "./shared/runtime.js";
import { webhook } from "./shared/webhook.js";

/** Bot Framework activities: verify the token, dedupe, enqueue; the worker replies through the Bot Connector. */
export const handler = middy(webhook("teams")).use(injectLambdaContext(logger)).use(logMetrics(metrics)).use(credentialsMiddleware());
