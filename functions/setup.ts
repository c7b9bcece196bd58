import middy from "@middy/core";
import type { CloudFormationCustomResourceEvent, Context } from "aws-lambda";
import { databaseFor, setupDatabase } from "../lib/setup-database.js";
import { contentKeysFor } from "./shared/content-keys.js";
import { config, credentialsMiddleware, credentialsOf, logger, mongoClientFor, observability } from "./shared/runtime.js";

/** What the deploy step did, in the custom resource's `Status` attribute and the log. */
type SetupStatus = "set-up" | "skipped-no-uri" | "failed" | "not-run";

/**
 * The deploy step that makes the database's indexes (docs/deploying.md, "Database set-up"), run by a
 * CloudFormation custom resource on every deploy that changes this code, or by hand with
 * `aws lambda invoke`. It never fails the deployment: on a first deploy the secret is still
 * empty, or Atlas does not yet admit the stack's addresses; the api and worker then set the
 * database up on their first request instead, and the log says why it was skipped.
 */
async function setup(event: SetupEvent, context: Context): Promise<{ status: SetupStatus }> {
  // Deleting the stack leaves the data and its indexes alone.
  const status = event.RequestType === "Delete" ? "not-run" : await runSetup(context);
  if (isCustomResourceEvent(event)) await respond(event, status);
  return { status };
}

/** A custom resource request, or `{}` from `aws lambda invoke`. */
type SetupEvent = CloudFormationCustomResourceEvent | { RequestType?: undefined };

const isCustomResourceEvent = (event: SetupEvent): event is CloudFormationCustomResourceEvent => event.RequestType !== undefined;

async function runSetup(context: Context): Promise<SetupStatus> {
  try {
    const credentials = credentialsOf(context);
    if (credentials.mongodbUri === undefined) {
      logger.warn("database setup skipped", { reason: "mongodbUri is empty in the database secret" });
      return "skipped-no-uri";
    }
    const client = mongoClientFor(credentials);
    // With the tenants' KMS keys: contents stored clear before (an earlier release, or encryption off) are encrypted here.
    await setupDatabase(databaseFor(client, config, undefined, contentKeysFor(client)));
    logger.info("database set up", { database: config.dbName });
    return "set-up";
  } catch (error) {
    logger.error("database setup failed", { error: error instanceof Error ? error.name : "unknown" });
    return "failed";
  }
}

/** The custom resource protocol: the outcome is PUT to the pre-signed URL CloudFormation waits on. */
async function respond(event: CloudFormationCustomResourceEvent, status: SetupStatus): Promise<void> {
  const body = JSON.stringify({
    Status: "SUCCESS",
    PhysicalResourceId: "PhysicalResourceId" in event ? event.PhysicalResourceId : `${config.dbName}-setup`,
    StackId: event.StackId,
    RequestId: event.RequestId,
    LogicalResourceId: event.LogicalResourceId,
    Data: { Status: status },
  });
  // The URL is signed without a content type; fetch would add one.
  const response = await fetch(event.ResponseURL, { method: "PUT", headers: { "content-type": "" }, body });
  if (!response.ok) logger.error("custom resource response refused", { status: response.status });
}

export const handler = middy(setup)
  .use(observability({ metrics: false }))
  .use(credentialsMiddleware());
