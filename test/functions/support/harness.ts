import type { APIGatewayProxyStructuredResultV2, Context, SQSBatchResponse, SQSEvent } from "aws-lambda";
import { startConverseEndpoint, type ConverseEndpoint, type ConverseEndpointOptions } from "../../support/converse-endpoint.js";
import { dropKnownCollections } from "../../support/drop-collections.js";
import { TEST_SLACK_SIGNING_SECRET } from "../../support/slack-signing.js";
import { mongoUri, openTestDatabase, type TestDatabase } from "../../support/mongo.js";
import { startKmsKeysEndpoint, type KmsKeysEndpoint } from "../../support/kms-keys-endpoint.js";
import { startLocalAws, type LocalAws } from "./aws-endpoints.js";
import { apiEvent, lambdaContext, type ApiEventInput } from "./events.js";

/** The bot's Microsoft App ID in the test secret. */
export const TEST_TEAMS_APP_ID = "00000000-0000-0000-0000-00000000b07";

type Handler<E, R> = (event: E, context: Context) => Promise<R>;

export interface Harness {
  aws: LocalAws;
  converse: ConverseEndpoint;
  /** KMS at its HTTP boundary: the functions seal contents under tenants' keys made there (`CONTENT_KEYS=kms`, as the stack sets it). */
  kms: KmsKeysEndpoint;
  database: TestDatabase;
  api(input: ApiEventInput): Promise<{ status: number; headers: Record<string, string>; json: any }>;
  worker(event: SQSEvent): Promise<SQSBatchResponse>;
  slack: Handler<ReturnType<typeof apiEvent>, APIGatewayProxyStructuredResultV2>;
  teams: Handler<ReturnType<typeof apiEvent>, APIGatewayProxyStructuredResultV2>;
  close(): Promise<void>;
}

/**
 * Starts the local AWS endpoints and the Converse endpoint, sets the environment the stack sets,
 * and only then imports the handlers (they read configuration and prefetch the secret at import,
 * as in a Lambda cold start). Each test file gets its own process, so its own handler modules.
 */
export async function startHarness(options: { env?: Record<string, string>; converse?: ConverseEndpointOptions } = {}): Promise<Harness> {
  const aws = await startLocalAws();
  const converse = await startConverseEndpoint(options.converse);
  const database = await openTestDatabase("fn");
  const kms = await startKmsKeysEndpoint();
  aws.setCredentials({
    mongodbUri: mongoUri(),
    slackSigningSecret: TEST_SLACK_SIGNING_SECRET,
    slackBotToken: "xoxb-test",
    teamsAppId: TEST_TEAMS_APP_ID,
    teamsAppPassword: "test-password",
  });
  Object.assign(process.env, aws.environment, converse.environment, {
    MODEL_PROVIDER: "bedrock",
    MONGODB_DB: database.dbName,
    POWERTOOLS_SERVICE_NAME: "threadwise-test",
    POWERTOOLS_METRICS_NAMESPACE: "Threadwise",
    POWERTOOLS_LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "SILENT",
    POWERTOOLS_DEV: "true",
    POWERTOOLS_METRICS_DISABLED: "false",
    CONTENT_KEYS: "kms",
    CONTENT_KEY_DEPLOYMENT: "test",
    AWS_ENDPOINT_URL_KMS: kms.url,
    ...options.env,
  });
  const api = (await import("../../../functions/api.js")).handler as unknown as Handler<ReturnType<typeof apiEvent>, APIGatewayProxyStructuredResultV2>;
  const worker = (await import("../../../functions/worker.js")).handler as unknown as Handler<SQSEvent, SQSBatchResponse>;
  const slack = (await import("../../../functions/slack.js")).handler as unknown as Harness["slack"];
  const teams = (await import("../../../functions/teams.js")).handler as unknown as Harness["teams"];
  return {
    aws,
    converse,
    kms,
    database,
    async api(input) {
      const result = await api(apiEvent(input), lambdaContext("test-threadwise-api"));
      const body = result.body ?? "";
      return { status: result.statusCode ?? 0, headers: (result.headers ?? {}) as Record<string, string>, json: body ? JSON.parse(body) : undefined };
    },
    worker: (event) => worker(event, lambdaContext("test-threadwise-worker", 300_000)),
    slack,
    teams,
    async close() {
      await dropKnownCollections(database.db);
      await database.cleanup();
      await converse.close();
      await aws.close();
      await kms.close();
    },
  };
}
