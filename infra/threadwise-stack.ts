import { Annotations, Aws, CfnOutput, CustomResource, Duration, RemovalPolicy, Stack, Tags, Validations, type StackProps } from "aws-cdk-lib";
import { LambdaApplication, LambdaDeploymentConfig, type ILambdaDeploymentConfig } from "aws-cdk-lib/aws-codedeploy";
import { Rule, RuleTargetInput, Schedule } from "aws-cdk-lib/aws-events";
import { LambdaFunction } from "aws-cdk-lib/aws-events-targets";
import type { HttpApi } from "aws-cdk-lib/aws-apigatewayv2";
import { Key } from "aws-cdk-lib/aws-kms";
import type { CfnFunction } from "aws-cdk-lib/aws-lambda";
import type { RetentionDays } from "aws-cdk-lib/aws-logs";
import type { IQueue } from "aws-cdk-lib/aws-sqs";
import type { Construct } from "constructs";
import { fileURLToPath } from "node:url";
import { APPROVAL_SWEEP_EVENT } from "../lib/approvals/sweep-event.js";
import { TURN_RECOVERY_EVENT } from "../lib/agent/turn-recovery-event.js";
import { KEY_MAINTENANCE_EVENT } from "../lib/lifecycle/key-maintenance-event.js";
import { CREDENTIAL_SECRETS, type CredentialSecretName } from "../lib/config/credentials.js";
import { MCP_OAUTH_CALLBACK_PATH } from "../lib/config/mcp-oauth-config.js";
import { DEFAULT_ATHENA_CATALOG } from "../lib/config/tools-config.js";
import { DATABASE_SETUP_VERSION } from "../lib/store/database.js";
import { bedrockResourceArns } from "./bedrock-model.js";
import { FUNCTION_NAMES, FUNCTION_POOL_SIZES, planConnections, type FunctionName } from "./connection-budget.js";
import { AlarmTopic } from "./constructs/alarm-topic.js";
import { apiTokenIssuer } from "./constructs/api-user-pool.js";
import { CredentialsSecrets } from "./constructs/credentials-secrets.js";
import { FunctionNetwork } from "./constructs/function-network.js";
import { StreamEdge } from "./constructs/stream-edge.js";
import { METRICS_NAMESPACE, Operations } from "./constructs/operations.js";
import { BudgetAlarms } from "./constructs/budget-alarms.js";
import { ThreadwiseApi } from "./constructs/threadwise-api.js";
import { FUNCTION_RUNTIME, ThreadwiseFunction } from "./constructs/threadwise-function.js";
import { athenaResourceArns, knowledgeBaseArn } from "./constructs/tool-resources.js";
import { TurnQueues } from "./constructs/turn-queues.js";
import { limitsEnvironment, type DeploymentStrategy, type StageConfig, type StageToolsConfig } from "./stage-config.js";

/** API Gateway stops waiting for an HTTP API integration after 30 s; the function ends just before. */
export const API_FUNCTION_TIMEOUT = Duration.seconds(29);
/**
 * A Function URL streams for up to 15 minutes; the stream follows its turn for up to 14
 * (the follow's limit, docs/streaming.md) and ends before the function does.
 */
/** The api function's hard limit on a turn in the request (`SYNC_TURN_MAX_MS`): API Gateway's 30 s less a margin to answer 202. */
export const API_SYNC_TURN_MAX_MS = 28_000;
export const STREAM_FUNCTION_TIMEOUT = Duration.minutes(15);
/** Slack expects an answer within 3 s; the webhook functions only verify, dedupe and enqueue. */
export const WEBHOOK_FUNCTION_TIMEOUT = Duration.seconds(10);
/** How often the worker expires approvals nobody decided in time: an expiry is told the model at most this late. */
export const APPROVAL_SWEEP_INTERVAL = Duration.minutes(5);
/** How often the worker finishes turns whose attempt died: a crashed turn's conversation is free within the lease's TTL and this (docs/recovery.md). */
export const TURN_RECOVERY_INTERVAL = Duration.minutes(1);
/**
 * How often the worker runs key maintenance (docs/security.md, "Rotation"): rotates the tenants' keys
 * older than `CONTENT_KEY_ROTATION_DAYS`, then re-encrypts, each run resuming where the last stopped.
 */
export const KEY_MAINTENANCE_INTERVAL = Duration.hours(1);
/** Building an index over a large collection takes minutes; CloudFormation waits up to an hour for a custom resource. */
export const SETUP_FUNCTION_TIMEOUT = Duration.minutes(10);
/**
 * How long CloudFormation waits for the set-up's answer: its function's timeout and a minute. A
 * set-up that never answers (it timed out, or crashed at start) fails the deploy then, not an hour later.
 */
export const SETUP_RESPONSE_TIMEOUT = SETUP_FUNCTION_TIMEOUT.plus(Duration.minutes(1));

/**
 * The credentials secrets each function reads, and no others (docs/deploying.md, "The credentials secrets").
 * `powerBi` only where `query_semantic_model` is offered.
 */
export const FUNCTION_SECRETS: Readonly<Record<FunctionName, readonly CredentialSecretName[]>> = {
  api: ["database", "powerBi"],
  worker: ["database", "teamsBot", "channelReplies", "powerBi"],
  slack: ["database", "slackSigning", "channelReplies"],
  teams: ["database", "teamsBot", "channelReplies"],
  setup: ["database"],
  stream: ["database", "powerBi"],
};

/** The CodeDeploy configuration of each deployment strategy: 10 % for 5 minutes, 10 % more every minute, or all at once. */
export const DEPLOYMENT_CONFIGS: Readonly<Record<DeploymentStrategy, ILambdaDeploymentConfig>> = {
  canary: LambdaDeploymentConfig.CANARY_10PERCENT_5MINUTES,
  linear: LambdaDeploymentConfig.LINEAR_10PERCENT_EVERY_1MINUTE,
  "all-at-once": LambdaDeploymentConfig.ALL_AT_ONCE,
};

/** The tags of every resource of a stage's stack. */
export function stackTags(stage: string): Record<string, string> {
  return { application: "threadwise", stage };
}

/** How cdk-nag prints the pseudo parameters inside the ARNs it reports. */
const NAG_ARN_PLACEHOLDERS = { partition: "<AWS::Partition>", region: "<AWS::Region>", account: "<AWS::AccountId>" };
/** The pseudo parameters themselves, resolved by CloudFormation at deploy time. */
const STACK_ARN_CONTEXT = { partition: Aws.PARTITION, region: Aws.REGION, account: Aws.ACCOUNT_ID };

/** Why each wildcard in the Athena grants is needed, by the resource it ends. */
const ATHENA_WILDCARD_REASONS = {
  glueTables:
    "Athena resolves whichever tables of this one Glue database the model's query names, and those tables are " +
    "created and replaced by the data team after deployment; the grant is read-only and limited to this database.",
  dataObjects:
    "Athena reads the objects of the queried tables with the caller's permissions; their keys change with every " +
    "data load, so reading covers the objects of the bucket the operator named as the tables' data (read-only, " +
    "no write or delete).",
  resultsObjects:
    "Athena writes each query's results under a new key named after its query id and reads them back for " +
    "GetQueryResults, so the keys are unknown in advance; reading and writing are limited to the configured " +
    "results prefix.",
} as const;

/** The secrets the stage's functions read: Power BI's only where the tool is offered. */
function secretsInUse(config: StageConfig): CredentialSecretName[] {
  const names = new Set(FUNCTION_NAMES.flatMap((name) => FUNCTION_SECRETS[name]));
  if (!config.tools.powerBi) names.delete("powerBi");
  return [...names];
}

const entry = (name: string) => fileURLToPath(new URL(`../functions/${name}.ts`, import.meta.url));

export interface ThreadwiseStackProps extends StackProps {
  config: StageConfig;
}

/** One stage of Threadwise: HTTP API, streaming URL, the functions, the turn queue, the secrets, dashboard and alarms. */
export class ThreadwiseStack extends Stack {
  constructor(scope: Construct, id: string, props: ThreadwiseStackProps) {
    // A pinned stage deploys only into its account and region; a stage whose data is kept cannot be deleted by accident.
    super(scope, id, { env: props.config.environment, terminationProtection: props.config.retainData, ...props });
    const { config } = props;
    const { stage } = config;
    const removalPolicy = config.retainData ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;
    const logRetention = config.logRetentionDays as RetentionDays;
    const serviceName = `threadwise-${stage}`;
    // Every taggable resource says what it belongs to: cost reports and Resource Groups split by them.
    for (const [key, value] of Object.entries(stackTags(stage))) Tags.of(this).add(key, value);

    // Who signs the API's tokens: the stage's jwtIssuer, or a Cognito user pool the stack creates (docs/deploying.md, "Identity: a worked example").
    const jwt = apiTokenIssuer(this, config, removalPolicy);

    const secretNames = secretsInUse(config);
    const secrets = new CredentialsSecrets(this, "Credentials", {
      stage,
      names: secretNames,
      imported: config.secretArns,
      kmsKeyArn: config.secretsKmsKeyArn,
      removalPolicy,
    });
    const queues = new TurnQueues(this, "TurnQueues", {
      stage,
      workerTimeout: Duration.seconds(config.workerTimeoutSeconds),
      maxReceiveCount: config.maxReceiveCount,
      removalPolicy,
    });
    const bedrockArns = bedrockResourceArns(config.bedrockModelId, STACK_ARN_CONTEXT, config.bedrockFoundationModelId);
    const connections = planConnections({
      budget: config.mongodb.connectionBudget,
      replicaSetMembers: config.mongodb.replicaSetMembers,
      workerMaxConcurrency: config.workerMaxConcurrency,
      // The recovery schedule runs in every stage.
      scheduledSweep: true,
      streamConcurrency: config.streamConcurrency,
      webhookConcurrency: config.ceilings.webhookConcurrency,
    });
    const network = config.vpc ? new FunctionNetwork(this, "Network", { stage, logRetention, removalPolicy, ...config.vpc }) : undefined;

    const environment: Record<string, string> = {
      STAGE: stage,
      MONGODB_DB: config.mongodbDb,
      POWERTOOLS_SERVICE_NAME: serviceName,
      POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
      POWERTOOLS_LOG_LEVEL: "INFO",
      // A handler's response and error hold message contents: traces get neither.
      POWERTOOLS_TRACER_CAPTURE_RESPONSE: "false",
      POWERTOOLS_TRACER_CAPTURE_ERROR: "false",
      // Atlas is reached across a network: the handlers refuse a URI without TLS.
      MONGODB_REQUIRE_TLS: "true",
      TURN_MAX_RECEIVES: String(config.maxReceiveCount),
      // API Gateway cuts a response at 30 s: past 28 s a model call under way in the request is aborted and the worker makes it again.
      SYNC_TURN_MAX_MS: String(API_SYNC_TURN_MAX_MS),
      JWT_ISSUER: jwt.issuer,
      JWT_AUDIENCE: jwt.audience.join(","),
      ...(config.jwtJwksUrl ? { JWT_JWKS_URL: config.jwtJwksUrl } : {}),
      ...(jwt.tenantClaim ? { JWT_TENANT_CLAIM: jwt.tenantClaim } : {}),
      ...(jwt.requireTenant ? { JWT_REQUIRE_TENANT: "true" } : {}),
      ...(config.operatorRole ? { OPERATOR_ROLE: config.operatorRole } : {}),
    };
    const fn = (name: FunctionName, description: string, memorySize: number, timeout: Duration) => {
      const f = new ThreadwiseFunction(this, `${name[0].toUpperCase()}${name.slice(1)}Function`, {
        stage,
        name,
        entry: entry(name),
        description,
        memorySize,
        timeout,
        logRetention,
        removalPolicy,
        environment,
        reservedConcurrency: connections.reservedConcurrency[name],
        network: network ? { vpc: network.vpc, securityGroup: network.securityGroup } : undefined,
      });
      f.useSecrets(secrets, FUNCTION_SECRETS[name]);
      if (config.tracing.mode === "adot") f.useOpenTelemetryLayer(config.tracing.layerArn);
      f.useMongoDb({
        maxPoolSize: FUNCTION_POOL_SIZES[name],
        maxIdleTimeMs: config.mongodb.maxIdleSeconds * 1000,
        // An index build may take minutes on a large collection; the function's timeout bounds it.
        ...(name === "setup" ? { socketTimeoutMs: timeout.toMilliseconds() } : {}),
      });
      return f;
    };

    const setup = fn(
      "setup",
      "Threadwise database set-up (indexes): run on every deploy, and by hand once the database secret is filled in",
      512,
      SETUP_FUNCTION_TIMEOUT,
    );
    const databaseSetup = new CustomResource(this, "DatabaseSetup", {
      serviceToken: setup.fn.functionArn,
      resourceType: "Custom::ThreadwiseDatabaseSetup",
      serviceTimeout: SETUP_RESPONSE_TIMEOUT,
      // A new version of the indexes or of the code that makes them runs the set-up again.
      properties: { Version: DATABASE_SETUP_VERSION, Code: (setup.fn.node.defaultChild as CfnFunction).code },
    });

    const api = fn("api", "Threadwise HTTP API (/v1, /healthz, /readyz): runs short turns, hands long ones to the worker", 1024, API_FUNCTION_TIMEOUT);
    api.useTurnQueue(queues.queue);
    api.useBedrockModel(config.bedrockModelId, bedrockArns);

    // The api's streaming routes on a transport that streams (docs/streaming.md, "In AWS"): turns run as in the api.
    const stream = fn(
      "stream",
      "Threadwise streaming URL: a turn's events as server-sent events (POST .../messages, GET .../turns/{turnId}/events)",
      1024,
      STREAM_FUNCTION_TIMEOUT,
    );
    stream.useTurnQueue(queues.queue);
    stream.useBedrockModel(config.bedrockModelId, bedrockArns);
    const functionUrl = stream.addStreamingUrl({ behindCloudFront: config.streamCdn !== undefined });
    // In prod, optionally: CloudFront and AWS WAF in front, the Function URL reachable only through them (docs/deploying.md).
    const edge = config.streamCdn ? new StreamEdge(this, "StreamEdge", { stage, url: functionUrl, webAclArn: config.streamCdn.webAclArn }) : undefined;
    const streamingUrl = edge?.url ?? functionUrl.url;
    api.useStreamingUrl(streamingUrl);

    const worker = fn(
      "worker",
      "Threadwise worker: one queued turn per invocation, replies to its channel",
      1024,
      Duration.seconds(config.workerTimeoutSeconds),
    );
    worker.useBedrockModel(config.bedrockModelId, bedrockArns);
    worker.consumeTurnQueue(queues.queue, config.workerMaxConcurrency);
    // Contents at rest: the functions that read or write them seal them under each tenant's KMS key; only the api erases tenants.
    this.useContentKeys({ api, stream, worker, setup }, config);
    // Channel turns run only in the worker; the api's callers carry their roles in their tokens.
    worker.useChannelRoles(config.tools.channelRoles);
    this.scheduleSweeps(worker, queues.queue, config.tools.toolApprovals !== undefined);

    // The api and the stream run sync turns and the worker async ones, so all three call the tools; the webhooks only enqueue.
    this.warnAboutTools(config.tools);
    for (const f of [api, stream, worker]) {
      this.useTools(f, config.tools);
      // The functions that run turns admit them and reserve their model calls (docs/limits.md).
      for (const [name, value] of Object.entries(limitsEnvironment(config.limits))) f.fn.addEnvironment(name, value);
      // Both search the conversation: the api in sync turns, the worker in queued ones.
      if (config.recallEmbeddingsModelId) {
        const [modelArn] = bedrockResourceArns(config.recallEmbeddingsModelId, STACK_ARN_CONTEXT);
        f.useEmbeddingsModel(config.recallEmbeddingsModelId, modelArn);
      }
      // New code serves only once the deploy step has set the database up (or found its secret empty).
      f.fn.node.addDependency(databaseSetup);
    }

    const slack = fn("slack", "Threadwise Slack webhook: verify, dedupe, enqueue; approval buttons", 512, WEBHOOK_FUNCTION_TIMEOUT);
    slack.useTurnQueue(queues.queue);

    const teams = fn("teams", "Threadwise Teams (Bot Framework) webhook: verify, enqueue; approval card actions", 512, WEBHOOK_FUNCTION_TIMEOUT);
    teams.useTurnQueue(queues.queue);
    // The webhooks decide approvals as the clicking user, whose approver roles come from the same mapping.
    for (const f of [slack, teams]) f.useChannelRoles(config.tools.channelRoles);

    const httpApi = new ThreadwiseApi(this, "Api", {
      stage,
      jwtIssuer: jwt.issuer,
      jwtAudience: jwt.audience,
      apiFunction: api.alias,
      slackFunction: slack.alias,
      teamsFunction: teams.alias,
      logRetention,
      removalPolicy,
      throttle: { rateLimit: config.ceilings.apiThrottleRate, burstLimit: config.ceilings.apiThrottleBurst },
    });

    // Per-user MCP sign-in: the functions that run turns start it, the api finishes it at its callback (docs/mcp-oauth.md).
    if (config.mcpOAuth) this.useMcpOAuth([api, stream, worker], httpApi.httpApi, stage, removalPolicy);

    const alarmTopic = new AlarmTopic(this, "Alarms", { stage, ...config.alarms }).topic;
    const operations = new Operations(this, "Operations", {
      stage,
      serviceName,
      functions: { api: api.fn, worker: worker.fn, slack: slack.fn, teams: teams.fn, stream: stream.fn },
      workerTimeout: Duration.seconds(config.workerTimeoutSeconds),
      bedrockModelId: config.bedrockModelId,
      queue: queues.queue,
      deadLetterQueue: queues.deadLetterQueue,
      httpApi: httpApi.httpApi,
      alarmTopic,
      aliases: { api: api.alias, worker: worker.alias, slack: slack.alias, teams: teams.alias, stream: stream.alias },
      approvalSweep: config.tools.toolApprovals !== undefined,
    });
    new BudgetAlarms(this, "BudgetAlarms", { stage, serviceName, dashboard: operations.dashboard, alarmTopic });
    const application = new LambdaApplication(this, "Deployments", { applicationName: `${stage}-threadwise` });
    for (const [name, f] of Object.entries({ api, worker, slack, teams, stream })) {
      f.deployGradually(application, DEPLOYMENT_CONFIGS[config.deployment], operations.rollbackAlarms(name as "api" | "worker" | "slack" | "teams" | "stream"));
    }

    const nodeReason =
      `${FUNCTION_RUNTIME.name} is pinned on purpose: the bundle targets it and it is the newest runtime the code ` +
      `is tested on (local dev and CI run Node 20/22); moving to a newer runtime is a deliberate, tested change.`;
    const xrayReason =
      "X-Ray active tracing: Lambda grants xray:PutTraceSegments and xray:PutTelemetryRecords, which take no " +
      "resource narrower than *; they only write trace data.";
    const networkReason =
      " Lambda creates, describes and deletes the function's network interfaces in the VPC with the execution " +
      "role; EC2 accepts no narrower resource for DescribeNetworkInterfaces and DescribeSubnets, and the " +
      "interfaces' ids are not known before Lambda makes them.";
    const contentKeysReason =
      " KMS's CreateKey takes no resource narrower than * (the key does not exist yet): the function makes its tenants' " +
      "content keys with it, only symmetric encryption keys tagged with a tenant and this stage (the policy's conditions).";
    for (const f of [api, worker, slack, teams, setup, stream]) {
      Validations.of(f.fn).acknowledge({ id: "AwsSolutions-L1", reason: nodeReason });
      const reason = (network ? xrayReason + networkReason : xrayReason) + (f.makesContentKeys ? contentKeysReason : "");
      Validations.of(f.role).acknowledge({ id: "AwsSolutions-IAM5[Resource::*]", reason });
    }
    // The queue grants (grantSendMessages) add the queue key's use, as SQS needs it to encrypt a message (docs/security.md, "The turn queue").
    for (const f of [api, stream, worker, slack, teams]) {
      for (const action of ["kms:GenerateDataKey*", "kms:ReEncrypt*"]) {
        Validations.of(f.role).acknowledge({
          id: `AwsSolutions-IAM5[Action::${action}]`,
          reason:
            "CDK's queue grant (grantSendMessages on a KMS-encrypted queue) adds the queue key's encrypt and decrypt " +
            "actions as these families; the statement's resource is that one key, which encrypts only the turn queues.",
        });
      }
    }
    for (const f of [api, worker, slack, teams, setup, stream].filter((fn) => fn.makesContentKeys)) {
      Validations.of(f.role).acknowledge({
        id: `AwsSolutions-IAM5[Resource::arn:${NAG_ARN_PLACEHOLDERS.partition}:kms:${NAG_ARN_PLACEHOLDERS.region}:${NAG_ARN_PLACEHOLDERS.account}:key/*]`,
        reason:
          "Each tenant's content key is made at run time by the function, so its ARN is unknown to the stack: use (and the " +
          "api's shred) is limited to keys of this account and region tagged with a tenant and this stage, and tagging to a key being made.",
      });
    }
    // cdk-nag names each wildcard resource; the same function with CloudFormation's placeholders yields those names.
    const wildcardModelArns = bedrockResourceArns(config.bedrockModelId, NAG_ARN_PLACEHOLDERS, config.bedrockFoundationModelId).filter((a) => a.includes("*"));
    for (const f of [api, worker, stream]) {
      for (const arn of wildcardModelArns) {
        Validations.of(f.role).acknowledge({
          id: `AwsSolutions-IAM5[Resource::${arn}]`,
          reason:
            "Bedrock cross-region inference: the inference profile sends each call to a region of its geography that AWS " +
            "picks, and IAM checks the foundation model ARN in that region, so only the region is a wildcard; the model " +
            "is fixed.",
        });
      }
    }

    new CfnOutput(this, "ApiUrl", { value: httpApi.httpApi.apiEndpoint, description: "Base URL of the HTTP API" });
    new CfnOutput(this, "StreamingUrl", {
      value: streamingUrl,
      description: "Base URL of the streaming routes: POST /v1/conversations/{id}/messages (Accept: text/event-stream) and GET .../turns/{turnId}/events",
    });
    new CfnOutput(this, "TurnQueueUrl", { value: queues.queue.queueUrl });
    for (const [name, secret] of Object.entries(secrets.created) as [CredentialSecretName, { secretArn: string }][]) {
      const id = `${name[0].toUpperCase()}${name.slice(1)}SecretArn`;
      new CfnOutput(this, id, { value: secret.secretArn, description: `Fill in ${CREDENTIAL_SECRETS[name].keys.join(", ")} (see docs/deploying.md)` });
    }
    if (network) new CfnOutput(this, "NatPublicIps", { value: network.natPublicIps, description: "Add these to Atlas's IP access list" });
    new CfnOutput(this, "SetupFunctionName", {
      value: setup.fn.functionName,
      description: "Invoke once the database secret is filled in (see docs/deploying.md)",
    });
    new CfnOutput(this, "ReservedConnections", { value: String(connections.total), description: "MongoDB connections the stage's functions can hold at most" });
    new CfnOutput(this, "DashboardName", { value: operations.dashboard.dashboardName });
    new CfnOutput(this, "AlarmTopicArn", { value: operations.alarmTopicArn, description: 'Where every alarm notifies (docs/operations.md, "Who is paged")' });
  }

  /**
   * The worker's schedules: the turn recovery sweep (docs/recovery.md) and key maintenance
   * (docs/security.md, "Rotation") in every stage, and the approvals sweep (docs/approvals.md,
   * "Expiry") where approvals are configured. Each invokes the
   * worker's live alias, which queues the turns it resumes. A failed run is not retried: the
   * next one comes within the interval and takes what this one left. EventBridge's retry policy
   * covers only handing the event to Lambda; Lambda's own retries of an asynchronous invocation
   * (two, by default, and events kept six hours) are turned off on the alias, whose only
   * asynchronous callers are these schedules, and an event older than the shorter interval is dropped.
   */
  private scheduleSweeps(worker: ThreadwiseFunction, queue: IQueue, approvals: boolean): void {
    worker.useTurnQueue(queue);
    worker.alias.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: TURN_RECOVERY_INTERVAL });
    new Rule(this, "TurnRecovery", {
      description: "Threadwise: finish or resume turns whose worker died, from their thread",
      schedule: Schedule.rate(TURN_RECOVERY_INTERVAL),
      targets: [new LambdaFunction(worker.alias, { event: RuleTargetInput.fromObject(TURN_RECOVERY_EVENT), retryAttempts: 0 })],
    });
    new Rule(this, "KeyMaintenance", {
      description: "Threadwise: rotate tenants' content keys that are due, then re-encrypt what earlier keys sealed",
      schedule: Schedule.rate(KEY_MAINTENANCE_INTERVAL),
      targets: [new LambdaFunction(worker.alias, { event: RuleTargetInput.fromObject(KEY_MAINTENANCE_EVENT), retryAttempts: 0 })],
    });
    if (!approvals) return;
    new Rule(this, "ApprovalSweep", {
      description: "Threadwise: expire tool approvals nobody decided in time and resume their turns",
      schedule: Schedule.rate(APPROVAL_SWEEP_INTERVAL),
      targets: [new LambdaFunction(worker.alias, { event: RuleTargetInput.fromObject(APPROVAL_SWEEP_EVENT), retryAttempts: 0 })],
    });
  }

  /**
   * Contents at rest (docs/security.md, "Contents at rest in AWS"): with `contentEncryption` on (the default), the
   * api, stream, worker and setup functions seal contents under each tenant's KMS key, tagged with this stage; the
   * api alone, which erases tenants, may schedule their keys for deletion. The webhooks read and write no content
   * field and get no key. Off (explicitly), every function is told so, and preflight reports it.
   */
  private useContentKeys(functions: Record<"api" | "stream" | "worker" | "setup", ThreadwiseFunction>, config: StageConfig): void {
    for (const [name, f] of Object.entries(functions)) {
      if (!config.contentEncryption.enabled) f.withoutContentEncryption();
      else f.useContentKeys({ deployment: config.stage, ...config.contentEncryption, shred: name === "api" });
    }
  }

  /**
   * The KMS key whose data keys seal users' MCP tokens (rotated yearly, kept with a retained stage's
   * data), and the callback URL on the API. The URL is the API's own endpoint: the functions' variable
   * refers to the HTTP API resource alone, which refers to none of its integrations, so no cycle.
   */
  private useMcpOAuth(functions: ThreadwiseFunction[], httpApi: HttpApi, stage: string, removalPolicy: RemovalPolicy): Key {
    const key = new Key(this, "McpOAuthKey", {
      description: `Threadwise ${stage}: data keys sealing users' MCP OAuth tokens (docs/mcp-oauth.md)`,
      enableKeyRotation: true,
      removalPolicy,
    });
    const redirectUrl = `${httpApi.apiEndpoint}${MCP_OAUTH_CALLBACK_PATH}`;
    for (const f of functions) f.useMcpOAuth(key, redirectUrl);
    return key;
  }

  /** Turns on each configured AWS tool engine for `f`, with its grants, variables and the acknowledgements of its wildcards. */
  private useTools(f: ThreadwiseFunction, tools: StageToolsConfig): void {
    if (tools.athena) {
      f.useAthena(tools.athena, athenaResourceArns(tools.athena, STACK_ARN_CONTEXT));
      // Same function, cdk-nag's placeholders: the names of the wildcard resources it reports.
      const nag = athenaResourceArns(tools.athena, NAG_ARN_PLACEHOLDERS);
      const wildcards: [string | undefined, string][] = [
        ...nag.glue.filter((a) => a.includes("*")).map((a): [string, string] => [a, ATHENA_WILDCARD_REASONS.glueTables]),
        ...nag.dataObjects.map((a): [string, string] => [a, ATHENA_WILDCARD_REASONS.dataObjects]),
        [nag.resultsObjects, ATHENA_WILDCARD_REASONS.resultsObjects],
      ];
      for (const [arn, reason] of wildcards) {
        if (arn) Validations.of(f.role).acknowledge({ id: `AwsSolutions-IAM5[Resource::${arn}]`, reason });
      }
    }
    if (tools.knowledgeBase) {
      f.useKnowledgeBase(tools.knowledgeBase, knowledgeBaseArn(tools.knowledgeBase.id, tools.knowledgeBase.region, STACK_ARN_CONTEXT));
    }
    // The sample SQLite data and handbook are local mode's; a deployment without its own source offers no such tool, unless the stage keeps them.
    if (!tools.athena && !tools.sampleTools) f.withoutTool("sql");
    if (!tools.knowledgeBase && !tools.sampleTools) f.withoutTool("documents");
    if (tools.powerBi) f.usePowerBi(tools.powerBi);
    if (tools.followUpWebhookUrl) f.useFollowUpWebhook(tools.followUpWebhookUrl);
    if (tools.toolRoles) f.useToolRoles(tools.toolRoles);
    if (tools.toolApprovals) f.useToolApprovals(tools.toolApprovals);
  }

  /** Grants the stack cannot derive from context, said at synth rather than discovered at the first query. */
  private warnAboutTools(tools: StageToolsConfig): void {
    const athena = tools.athena;
    if (!athena) return;
    if (athena.catalog !== DEFAULT_ATHENA_CATALOG) {
      Annotations.of(this).addWarningV2(
        "threadwise:athena-catalog",
        `athenaCatalog ${athena.catalog} is not ${DEFAULT_ATHENA_CATALOG}: no Glue grant was added; grant the api ` +
          `and worker roles what that catalog needs (another account's Glue, or its Lambda connector)`,
      );
    }
    if (!athena.results) {
      Annotations.of(this).addWarningV2(
        "threadwise:athena-results",
        "neither athenaOutputLocation nor athenaResultsBucket is set: no S3 grant for query results was added, which " +
          "works only with a workgroup that uses Athena managed query results",
      );
    }
    if (athena.dataBucketArns.length === 0) {
      Annotations.of(this).addWarningV2(
        "threadwise:athena-data",
        "athenaDataBucketArns is not set: no S3 read grant on the tables' data was added; queries fail unless the data is readable another way",
      );
    }
  }
}
