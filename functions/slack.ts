import middy from "@middy/core";
import { injectLambdaContext } from "@aws-lambda-powertools/logger/middleware";
import { logMetrics } from "@aws-lambda-powertools/metrics/middleware";
import { credentialsMiddleware, logger, metrics } from "./shared/runtime.js";
import { webhook } from "./shared/webhook.js";

/** Slack Events API: verify the signature, dedupe, enqueue, answer within Slack's three seconds. */
export const handler = middy(webhook("slack")).use(injectLambdaContext(logger)).use(logMetrics(metrics)).use(credentialsMiddleware());
