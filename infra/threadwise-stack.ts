import { Annotations, Aws, CfnOutput, Duration, RemovalPolicy, Stack, Validations, type StackProps } from "aws-cdk-lib";
import { RetentionDays } from "aws-cdk-lib/aws-logs";
import { Secret, type ISecret } from "aws-cdk-lib/aws-secretsmanager";
import { Topic } from "aws-cdk-lib/aws-sns";
import type { Construct } from "constructs";
import { fileURLToPath } from "node:url";
import { bedrockResourceArns } from "./bedrock-model.js";
import { METRICS_NAMESPACE, Operations } from "./constructs/operations.js";
import { ThreadwiseApi } from "./constructs/threadwise-api.js";
import { FUNCTION_RUNTIME, ThreadwiseFunction } from "./constructs/threadwise-function.js";
import { TurnQueues } from "./constructs/turn-queues.js";
import { PLACEHOLDER_JWT_ISSUER, type StageConfig } from "./stage-config.js";

/** API Gateway stops waiting for an HTTP API integration after 30 s; the function ends just before. */
export const API_FUNCTION_TIMEOUT = Duration.seconds(29);
/** Slack expects an answer within 3 s; the webhook functions only verify, dedupe and enqueue. */
export const WEBHOOK_FUNCTION_TIMEOUT = Duration.seconds(10);

/** How cdk-nag prints the pseudo parameters inside the ARNs it reports. */
const NAG_ARN_PLACEHOLDERS = { partition: "<AWS::Partition>", region: "<AWS::Region>", account: "<AWS::AccountId>" };

const entry = (name: string) => fileURLToPath(new URL(`../functions/${name}.ts`, import.meta.url));

export interface ThreadwiseStackProps extends StackProps {
  config: StageConfig;
}

/** One stage of Threadwise: HTTP API, four functions, the turn queue, the secret, dashboard and alarms. */
export class ThreadwiseStack extends Stack {
  constructor(scope: Construct, id: string, props: ThreadwiseStackProps) {
    super(scope, id, props);
    const { config } = props;
    const { stage } = config;
    const removalPolicy = config.retainData ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;
    const logRetention = config.logRetentionDays as RetentionDays;
    const serviceName = `threadwise-${stage}`;

    if (config.jwtIssuer === PLACEHOLDER_JWT_ISSUER) {
      Annotations.of(this).addWarningV2(
        "threadwise:placeholder-issuer",
        `jwtIssuer is not set: the API will reject every token until you deploy with -c jwtIssuer=<your issuer URL>`,
      );
    }

    const secret = this.credentialsSecret(config, removalPolicy);
    const queues = new TurnQueues(this, "TurnQueues", {
      stage,
      workerTimeout: Duration.seconds(config.workerTimeoutSeconds),
      maxReceiveCount: config.maxReceiveCount,
    });
    const bedrockArns = bedrockResourceArns(
      config.bedrockModelId,
      { partition: Aws.PARTITION, region: Aws.REGION, account: Aws.ACCOUNT_ID },
      config.bedrockFoundationModelId,
    );

    const environment: Record<string, string> = {
      STAGE: stage,
      MONGODB_DB: config.mongodbDb,
      POWERTOOLS_SERVICE_NAME: serviceName,
      POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
      POWERTOOLS_LOG_LEVEL: "INFO",
      // Atlas is reached across the internet: the handlers refuse a URI without TLS.
      MONGODB_REQUIRE_TLS: "true",
      TURN_MAX_RECEIVES: String(config.maxReceiveCount),
      JWT_ISSUER: config.jwtIssuer,
      JWT_AUDIENCE: config.jwtAudience.join(","),
      ...(config.jwtJwksUrl ? { JWT_JWKS_URL: config.jwtJwksUrl } : {}),
      ...(config.jwtTenantClaim ? { JWT_TENANT_CLAIM: config.jwtTenantClaim } : {}),
    };
    const fn = (name: string, description: string, memorySize: number, timeout: Duration) =>
      new ThreadwiseFunction(this, `${name[0].toUpperCase()}${name.slice(1)}Function`, {
        stage,
        name,
        entry: entry(name),
        description,
        memorySize,
        timeout,
        logRetention,
        removalPolicy,
        environment,
      });

    const api = fn("api", "Threadwise HTTP API (/v1, /healthz): runs short turns, hands long ones to the worker", 1024, API_FUNCTION_TIMEOUT);
    api.useSecret(secret);
    api.useTurnQueue(queues.queue);
    api.useBedrockModel(config.bedrockModelId, bedrockArns);

    const worker = fn("worker", "Threadwise worker: one queued turn per invocation, replies to its channel", 1024, Duration.seconds(config.workerTimeoutSeconds));
    worker.useSecret(secret);
    worker.useBedrockModel(config.bedrockModelId, bedrockArns);
    worker.consumeTurnQueue(queues.queue, config.workerMaxConcurrency);

    const slack = fn("slack", "Threadwise Slack Events API webhook: verify, dedupe, enqueue", 512, WEBHOOK_FUNCTION_TIMEOUT);
    slack.useSecret(secret);
    slack.useTurnQueue(queues.queue);

    const teams = fn("teams", "Threadwise Teams (Bot Framework) webhook: verify, enqueue", 512, WEBHOOK_FUNCTION_TIMEOUT);
    teams.useSecret(secret);
    teams.useTurnQueue(queues.queue);

    const httpApi = new ThreadwiseApi(this, "Api", {
      stage,
      jwtIssuer: config.jwtIssuer,
      jwtAudience: config.jwtAudience,
      apiFunction: api.fn,
      slackFunction: slack.fn,
      teamsFunction: teams.fn,
      logRetention,
      removalPolicy,
    });

    const operations = new Operations(this, "Operations", {
      stage,
      serviceName,
      functions: { api: api.fn, worker: worker.fn, slack: slack.fn, teams: teams.fn },
      queue: queues.queue,
      deadLetterQueue: queues.deadLetterQueue,
      httpApi: httpApi.httpApi,
      alarmTopic: config.alarmTopicArn ? Topic.fromTopicArn(this, "AlarmTopic", config.alarmTopicArn) : undefined,
    });

    const nodeReason = `${FUNCTION_RUNTIME.name} is pinned on purpose: the bundle targets it and it is the newest runtime the code is tested on (local dev and CI run Node 20/22); moving to a newer runtime is a deliberate, tested change.`;
    for (const f of [api, worker, slack, teams]) Validations.of(f.fn).acknowledge({ id: "AwsSolutions-L1", reason: nodeReason });
    // cdk-nag names each wildcard resource; the same function with CloudFormation's placeholders yields those names.
    const wildcardModelArns = bedrockResourceArns(config.bedrockModelId, NAG_ARN_PLACEHOLDERS, config.bedrockFoundationModelId).filter((a) => a.includes("*"));
    for (const f of [api, worker]) {
      for (const arn of wildcardModelArns) {
        Validations.of(f.role).acknowledge({
          id: `AwsSolutions-IAM5[Resource::${arn}]`,
          reason:
            "Bedrock cross-region inference: the inference profile sends each call to a region of its geography that AWS picks, and IAM checks the foundation model ARN in that region, so only the region is a wildcard; the model is fixed.",
        });
      }
    }

    new CfnOutput(this, "ApiUrl", { value: httpApi.httpApi.apiEndpoint, description: "Base URL of the HTTP API" });
    new CfnOutput(this, "TurnQueueUrl", { value: queues.queue.queueUrl });
    new CfnOutput(this, "SecretArn", { value: secret.secretArn, description: "Put the credentials JSON here (see README)" });
    new CfnOutput(this, "DashboardName", { value: operations.dashboard.dashboardName });
  }

  private credentialsSecret(config: StageConfig, removalPolicy: RemovalPolicy): ISecret {
    if (config.secretArn) {
      // A complete ARN ends in the six-character suffix Secrets Manager adds; a partial one does not.
      return /-[A-Za-z0-9]{6}$/.test(config.secretArn)
        ? Secret.fromSecretCompleteArn(this, "Credentials", config.secretArn)
        : Secret.fromSecretPartialArn(this, "Credentials", config.secretArn);
    }
    const secret = new Secret(this, "Credentials", {
      secretName: `${config.stage}/threadwise/credentials`,
      description: "Threadwise credentials JSON: mongodbUri, Slack and Teams secrets (see README)",
      removalPolicy,
    });
    Validations.of(secret).acknowledge({
        id: "AwsSolutions-SMG4",
        reason:
          "The values (MongoDB Atlas user, Slack signing secret and bot token, Teams app password) are issued by those services, which Secrets Manager cannot rotate without a custom rotation function per service; they are rotated at the source and written with put-secret-value.",
    });
    return secret;
  }
}
