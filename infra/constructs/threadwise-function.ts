import { Aws, type Duration, type RemovalPolicy, Validations } from "aws-cdk-lib";
import type { IAlarm } from "aws-cdk-lib/aws-cloudwatch";
import { LambdaDeploymentGroup, type ILambdaApplication, type ILambdaDeploymentConfig } from "aws-cdk-lib/aws-codedeploy";
import { SubnetType, type ISecurityGroup, type IVpc } from "aws-cdk-lib/aws-ec2";
import { Effect, PolicyStatement, Role, ServicePrincipal } from "aws-cdk-lib/aws-iam";
import {
  Alias,
  Architecture,
  FunctionUrlAuthType,
  InvokeMode,
  LayerVersion,
  Runtime,
  Tracing,
  type FunctionUrl,
  type IFunctionUrl,
} from "aws-cdk-lib/aws-lambda";
import { SqsEventSource } from "aws-cdk-lib/aws-lambda-event-sources";
import { NodejsFunction } from "aws-cdk-lib/aws-lambda-nodejs";
import { LogGroup, type RetentionDays } from "aws-cdk-lib/aws-logs";
import type { IKey } from "aws-cdk-lib/aws-kms";
import type { ISecret } from "aws-cdk-lib/aws-secretsmanager";
import type { IQueue } from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";
import { CREDENTIAL_SECRETS, type CredentialSecretName } from "../../lib/config/credentials.js";
import { DEPLOYMENT_KEY_TAG, TENANT_KEY_TAG } from "../../lib/config/encryption-config.js";
import { functionCode } from "../bundling/bundling.js";
import type { AthenaStageConfig, StageToolsConfig } from "../stage-config.js";
import type { CredentialsSecrets } from "./credentials-secrets.js";
import type { AthenaResourceArns } from "./tool-resources.js";

/** The alias that serves traffic: API integrations and the queue's event source invoke it, CodeDeploy shifts it. */
export const LIVE_ALIAS = "live";

/**
 * What CodeDeploy does with the deployment group's role, as its managed policy
 * AWSCodeDeployRoleForLambdaLimited allows, narrowed to this function's alias.
 */
export const CODEDEPLOY_ALIAS_ACTIONS = ["lambda:GetAlias", "lambda:UpdateAlias", "lambda:GetProvisionedConcurrencyConfig"] as const;

/** Runtime of every function; the bundle target in bundling.ts matches it. */
export const FUNCTION_RUNTIME = Runtime.NODEJS_22_X;

/** Environment variable names set by the stack, each next to the grant that makes it usable. */
export const FUNCTION_ENV = {
  turnQueueUrl: "TURN_QUEUE_URL",
  streamingUrl: "STREAMING_URL",
  mongodbMaxPoolSize: "MONGODB_MAX_POOL_SIZE",
  mongodbMaxIdleTimeMs: "MONGODB_MAX_IDLE_TIME_MS",
  mongodbSocketTimeoutMs: "MONGODB_SOCKET_TIMEOUT_MS",
  modelProvider: "MODEL_PROVIDER",
  bedrockModelId: "BEDROCK_MODEL_ID",
  recallEmbeddingsModelId: "RECALL_EMBEDDINGS_MODEL_ID",
  sqlEngine: "SQL_ENGINE",
  athenaWorkgroup: "ATHENA_WORKGROUP",
  athenaDatabase: "ATHENA_DATABASE",
  athenaCatalog: "ATHENA_CATALOG",
  athenaOutputLocation: "ATHENA_OUTPUT_LOCATION",
  athenaSchemaDescription: "ATHENA_SCHEMA_DESCRIPTION",
  documentsEngine: "DOCUMENTS_ENGINE",
  knowledgeBaseId: "BEDROCK_KB_ID",
  knowledgeBaseRegion: "BEDROCK_KB_REGION",
  powerBiTenantId: "POWERBI_TENANT_ID",
  powerBiGroupId: "POWERBI_GROUP_ID",
  powerBiDatasetId: "POWERBI_DATASET_ID",
  followUpWebhookUrl: "FOLLOW_UP_WEBHOOK_URL",
  toolRoles: "TOOL_ROLES",
  toolApprovals: "TOOL_APPROVALS",
  slackRoles: "SLACK_ROLES",
  teamsRoles: "TEAMS_ROLES",
  mcpOAuthKmsKeyId: "MCP_OAUTH_KMS_KEY_ID",
  mcpOAuthRedirectUrl: "MCP_OAUTH_REDIRECT_URL",
  contentEncryption: "CONTENT_ENCRYPTION",
  contentKeys: "CONTENT_KEYS",
  contentKeyDeployment: "CONTENT_KEY_DEPLOYMENT",
  contentKeyDeletionDays: "CONTENT_KEY_DELETION_DAYS",
  contentKeyRotationDays: "CONTENT_KEY_ROTATION_DAYS",
} as const;

/** A tenant's first key, and a rotation's new one: `KmsTenantKeys` makes a tagged key (docs/security.md, "Contents at rest in AWS"). */
export const CONTENT_KEY_CREATE_ACTIONS = ["kms:CreateKey"] as const;
/** Tags given to CreateKey need `kms:TagResource` in an IAM policy covering every key of the account and region (KMS's rule). */
export const CONTENT_KEY_TAG_ACTIONS = ["kms:TagResource"] as const;
/** Envelope encryption under a KMS key: a data key, and its decryption. */
const ENVELOPE_KMS_ACTIONS = ["kms:GenerateDataKey", "kms:Decrypt"] as const;
/** Sealing and opening contents: a data key per tenant (cached), and its decryption. */
export const CONTENT_KEY_USE_ACTIONS = ENVELOPE_KMS_ACTIONS;
/** A tenant's erasure: every key of the tenant scheduled for deletion (the crypto-shred). */
export const CONTENT_KEY_SHRED_ACTIONS = ["kms:ScheduleKeyDeletion"] as const;

/** What sealing and opening users' MCP tokens takes: a new data key per write, and its decryption (docs/mcp-oauth.md). */
export const MCP_OAUTH_KMS_ACTIONS = ENVELOPE_KMS_ACTIONS;

/**
 * What Lambda does with the execution role to place a function in a VPC: one network interface
 * per subnet and security group, created, described and deleted by the service.
 */
export const VPC_NETWORK_INTERFACE_ACTIONS = [
  "ec2:CreateNetworkInterface",
  "ec2:DescribeNetworkInterfaces",
  "ec2:DescribeSubnets",
  "ec2:DeleteNetworkInterface",
  "ec2:AssignPrivateIpAddresses",
  "ec2:UnassignPrivateIpAddresses",
] as const;

/** What `sql_query` may do in Athena: run, watch, read and stop queries (no workgroup or catalog changes). */
export const ATHENA_QUERY_ACTIONS = ["athena:StartQueryExecution", "athena:GetQueryExecution", "athena:GetQueryResults", "athena:StopQueryExecution"] as const;
/** Glue Data Catalog reads Athena makes, with the caller's permissions, to plan a query. */
export const GLUE_READ_ACTIONS = ["glue:GetDatabase", "glue:GetTable", "glue:GetTables", "glue:GetPartitions"] as const;
/** Bucket-level reads Athena makes on the data and results buckets. */
export const S3_BUCKET_READ_ACTIONS = ["s3:GetBucketLocation", "s3:ListBucket"] as const;
/** Object reads of table data. */
export const S3_DATA_OBJECT_ACTIONS = ["s3:GetObject"] as const;
/** Athena writes results in parts and reads them back for GetQueryResults. */
export const S3_RESULTS_BUCKET_ACTIONS = [...S3_BUCKET_READ_ACTIONS, "s3:ListBucketMultipartUploads"] as const;
export const S3_RESULTS_OBJECT_ACTIONS = ["s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"] as const;

/** The ADOT layer's wrapper script, which Lambda runs the runtime through (`AWS_LAMBDA_EXEC_WRAPPER`). */
export const ADOT_EXEC_WRAPPER_VARIABLE = "AWS_LAMBDA_EXEC_WRAPPER";
export const ADOT_EXEC_WRAPPER = "/opt/otel-handler";

export interface ThreadwiseFunctionProps {
  stage: string;
  /** Short name (api, worker, slack, teams); the function is named `<stage>-threadwise-<name>`. */
  name: string;
  /** Handler source file; its `handler` export is the entry point. */
  entry: string;
  description: string;
  memorySize: number;
  timeout: Duration;
  logRetention: RetentionDays;
  removalPolicy: RemovalPolicy;
  environment: Record<string, string>;
  /** The most containers it runs at once (`infra/connection-budget.ts`). */
  reservedConcurrency: number;
  /** Private subnets of this VPC with this security group; unset: no VPC. */
  network?: { vpc: IVpc; securityGroup: ISecurityGroup };
}

/**
 * A handler in functions/ as a Lambda function: Node.js 22 on arm64, ESM bundle with source maps,
 * X-Ray tracing, its own log group with retention, and a role that can write only to that log group until one
 * of the `use*` methods adds a grant together with the variable that needs it.
 */
export class ThreadwiseFunction extends Construct {
  readonly fn: NodejsFunction;
  readonly role: Role;
  readonly logGroup: LogGroup;
  /** Whether `useContentKeys` granted it tenants' keys, `CreateKey` on `*` among them (what cdk-nag is told why). */
  makesContentKeys = false;
  private live?: Alias;

  constructor(scope: Construct, id: string, props: ThreadwiseFunctionProps) {
    super(scope, id);
    const functionName = `${props.stage}-threadwise-${props.name}`;
    this.logGroup = new LogGroup(this, "Logs", {
      retention: props.logRetention,
      removalPolicy: props.removalPolicy,
    });
    // An own role instead of AWSLambdaBasicExecutionRole, whose log grant covers every log group.
    this.role = new Role(this, "Role", {
      assumedBy: new ServicePrincipal("lambda.amazonaws.com"),
      description: `${functionName}: its log group and the grants added by the stack`,
    });
    this.logGroup.grantWrite(this.role);
    // Lambda creates the function's network interfaces with its role; the actions take no resource narrower than `*`.
    if (props.network) this.allow(VPC_NETWORK_INTERFACE_ACTIONS, ["*"]);
    this.fn = new NodejsFunction(this, "Function", {
      functionName,
      description: props.description,
      // Bundled by infra/bundling (esbuild with plugins), not by NodejsFunction's own esbuild command.
      code: functionCode(props.entry),
      handler: "index.handler",
      runtime: FUNCTION_RUNTIME,
      architecture: Architecture.ARM_64,
      memorySize: props.memorySize,
      timeout: props.timeout,
      reservedConcurrentExecutions: props.reservedConcurrency,
      role: this.role,
      // X-Ray: Powertools Tracer's segments, and the trace a queued turn continues (docs/operations.md).
      tracing: Tracing.ACTIVE,
      ...(props.network
        ? { vpc: props.network.vpc, vpcSubnets: { subnetType: SubnetType.PRIVATE_WITH_EGRESS }, securityGroups: [props.network.securityGroup] }
        : {}),
      logGroup: this.logGroup,
      environment: {
        ...props.environment,
        // Maps minified stack traces back to TypeScript lines in the logs.
        NODE_OPTIONS: "--enable-source-maps",
      },
    });
  }

  /**
   * Exports the function's OpenTelemetry spans through the ADOT Lambda layer (docs/operations.md,
   * "Tracing"): the layer's wrapper registers its SDK before the handler loads, so the spans of
   * lib/observability are recorded and sent, through the layer's collector, to X-Ray. Powertools'
   * own X-Ray segments are turned off, or each invocation would be traced twice.
   */
  useOpenTelemetryLayer(layerArn: string): void {
    this.fn.addLayers(LayerVersion.fromLayerVersionArn(this, "OpenTelemetryLayer", layerArn));
    this.fn.addEnvironment(ADOT_EXEC_WRAPPER_VARIABLE, ADOT_EXEC_WRAPPER);
    this.fn.addEnvironment("POWERTOOLS_TRACE_ENABLED", "false");
  }

  /**
   * Reads these credentials secrets and no other (the MongoDB URI and channel tokens live there,
   * never in the environment); each ARN goes in the variable `lib/config` reads it from.
   */
  useSecrets(secrets: CredentialsSecrets, names: readonly CredentialSecretName[]): void {
    for (const [name, secret] of Object.entries(secrets.grantRead(this.fn, names)) as [CredentialSecretName, ISecret][]) {
      this.fn.addEnvironment(CREDENTIAL_SECRETS[name].variable, secret.secretArn);
    }
  }

  /**
   * Sizes the container's MongoClient: a pool of `maxPoolSize` (part of the stage's connection
   * budget), idle connections closed after `maxIdleTimeMs`, and, for long operations such as an
   * index build, a socket timeout other than the default.
   */
  useMongoDb(options: { maxPoolSize: number; maxIdleTimeMs: number; socketTimeoutMs?: number }): void {
    this.fn.addEnvironment(FUNCTION_ENV.mongodbMaxPoolSize, String(options.maxPoolSize));
    this.fn.addEnvironment(FUNCTION_ENV.mongodbMaxIdleTimeMs, String(options.maxIdleTimeMs));
    if (options.socketTimeoutMs !== undefined) this.fn.addEnvironment(FUNCTION_ENV.mongodbSocketTimeoutMs, String(options.socketTimeoutMs));
  }

  /**
   * A Function URL on the live alias whose responses stream (`RESPONSE_STREAM`) for up to the
   * function's timeout. Public (`NONE`): the handler verifies the caller's JWT itself, as the HTTP
   * API's authorizer does, before anything runs. No CORS, as the HTTP API has none.
   */
  addStreamingUrl(options: { behindCloudFront?: boolean } = {}): FunctionUrl {
    // Behind CloudFront (`streamCdn`), `AWS_IAM`: only the distribution's requests, signed by origin access control, are let in.
    const authType = options.behindCloudFront ? FunctionUrlAuthType.AWS_IAM : FunctionUrlAuthType.NONE;
    return this.alias.addFunctionUrl({ authType, invokeMode: InvokeMode.RESPONSE_STREAM });
  }

  /**
   * Names the streaming URL (the Function URL, or the CloudFront distribution in front of it) to
   * this function's clients: the HTTP API's 406 to an event stream says where to ask.
   */
  useStreamingUrl(url: IFunctionUrl | string): void {
    this.fn.addEnvironment(FUNCTION_ENV.streamingUrl, typeof url === "string" ? url : url.url);
  }

  /**
   * Offers `oauth` MCP servers' tools with per-user sign-in (docs/mcp-oauth.md): data keys of `key`
   * seal and open users' tokens, and `redirectUrl` is the callback the authorization servers send the browser to.
   */
  useMcpOAuth(key: IKey, redirectUrl: string): void {
    key.grant(this.fn, ...MCP_OAUTH_KMS_ACTIONS);
    this.fn.addEnvironment(FUNCTION_ENV.mcpOAuthKmsKeyId, key.keyArn);
    this.fn.addEnvironment(FUNCTION_ENV.mcpOAuthRedirectUrl, redirectUrl);
  }

  /**
   * Seals contents at rest under each tenant's own KMS key, made by the function on the tenant's first
   * write (`CONTENT_KEYS=kms`, docs/security.md, "Contents at rest in AWS"). Least privilege through
   * KMS's own attribute-based access: the function may make only symmetric encryption keys tagged with a
   * tenant and with this deployment (`deployment`, the stage), and use, or with `shred` schedule for
   * deletion, only keys of this account and region that carry both tags, so two stages in one account
   * cannot use each other's keys. `CreateKey` takes no resource narrower than `*` (the key does not exist
   * yet): its conditions on the request's tags, spec and usage are what bound it.
   */
  useContentKeys(options: { deployment: string; keyDeletionDays: number; keyRotationDays: number; shred: boolean }): void {
    this.makesContentKeys = true;
    const keys = `arn:${Aws.PARTITION}:kms:${Aws.REGION}:${Aws.ACCOUNT_ID}:key/*`;
    const requestTags = {
      StringEquals: { [`aws:RequestTag/${DEPLOYMENT_KEY_TAG}`]: options.deployment },
      Null: { [`aws:RequestTag/${TENANT_KEY_TAG}`]: "false" },
      "ForAllValues:StringEquals": { "aws:TagKeys": [TENANT_KEY_TAG, DEPLOYMENT_KEY_TAG] },
    };
    this.role.addToPolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: [...CONTENT_KEY_CREATE_ACTIONS],
        resources: ["*"],
        conditions: {
          ...requestTags,
          StringEquals: { ...requestTags.StringEquals, "kms:KeySpec": "SYMMETRIC_DEFAULT", "kms:KeyUsage": "ENCRYPT_DECRYPT" },
        },
      }),
    );
    // Only while the key is being made: a key that already names a deployment (another stage's) cannot be re-tagged to this one.
    this.role.addToPolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: [...CONTENT_KEY_TAG_ACTIONS],
        resources: [keys],
        conditions: { ...requestTags, Null: { ...requestTags.Null, [`aws:ResourceTag/${DEPLOYMENT_KEY_TAG}`]: "true" } },
      }),
    );
    const ownKeys = {
      StringEquals: { [`aws:ResourceTag/${DEPLOYMENT_KEY_TAG}`]: options.deployment },
      Null: { [`aws:ResourceTag/${TENANT_KEY_TAG}`]: "false" },
    };
    const actions = [...CONTENT_KEY_USE_ACTIONS, ...(options.shred ? CONTENT_KEY_SHRED_ACTIONS : [])];
    this.role.addToPolicy(new PolicyStatement({ effect: Effect.ALLOW, actions, resources: [keys], conditions: ownKeys }));
    this.fn.addEnvironment(FUNCTION_ENV.contentEncryption, "on");
    this.fn.addEnvironment(FUNCTION_ENV.contentKeys, "kms");
    this.fn.addEnvironment(FUNCTION_ENV.contentKeyDeployment, options.deployment);
    this.fn.addEnvironment(FUNCTION_ENV.contentKeyDeletionDays, String(options.keyDeletionDays));
    this.fn.addEnvironment(FUNCTION_ENV.contentKeyRotationDays, String(options.keyRotationDays));
  }

  /** Stores contents in clear (`contentEncryption=off`, reported by preflight): no key, no grant. */
  withoutContentEncryption(): void {
    this.fn.addEnvironment(FUNCTION_ENV.contentEncryption, "off");
  }

  /** Enqueues turns for the worker. */
  useTurnQueue(queue: IQueue): void {
    queue.grantSendMessages(this.fn);
    this.fn.addEnvironment(FUNCTION_ENV.turnQueueUrl, queue.queueUrl);
  }

  /** Calls the Bedrock model (Converse uses the InvokeModel permissions) on these resources only. */
  useBedrockModel(modelId: string, resourceArns: string[]): void {
    this.role.addToPolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: ["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"],
        resources: resourceArns,
      }),
    );
    this.fn.addEnvironment(FUNCTION_ENV.modelProvider, "bedrock");
    this.fn.addEnvironment(FUNCTION_ENV.bedrockModelId, modelId);
  }

  /** Embeds turns and queries for `search_conversation`: `bedrock:InvokeModel` on that one foundation model only. */
  useEmbeddingsModel(modelId: string, modelArn: string): void {
    this.allow(["bedrock:InvokeModel"], [modelArn]);
    this.fn.addEnvironment(FUNCTION_ENV.recallEmbeddingsModelId, modelId);
  }

  /**
   * Runs `sql_query` on Athena in one workgroup over one database: query actions on the
   * workgroup, Glue reads on the database and its tables, S3 reads on the data buckets, and
   * reads and writes under the results location only.
   */
  useAthena(athena: AthenaStageConfig, arns: AthenaResourceArns): void {
    this.allow(ATHENA_QUERY_ACTIONS, [arns.workgroup]);
    if (arns.glue.length > 0) this.allow(GLUE_READ_ACTIONS, arns.glue);
    if (arns.dataBuckets.length > 0) {
      this.allow(S3_BUCKET_READ_ACTIONS, arns.dataBuckets);
      this.allow(S3_DATA_OBJECT_ACTIONS, arns.dataObjects);
    }
    if (arns.resultsBucket && arns.resultsObjects) {
      this.allow(S3_RESULTS_BUCKET_ACTIONS, [arns.resultsBucket]);
      this.allow(S3_RESULTS_OBJECT_ACTIONS, [arns.resultsObjects]);
    }
    this.fn.addEnvironment(FUNCTION_ENV.sqlEngine, "athena");
    this.fn.addEnvironment(FUNCTION_ENV.athenaWorkgroup, athena.workgroup);
    this.fn.addEnvironment(FUNCTION_ENV.athenaDatabase, athena.database);
    this.fn.addEnvironment(FUNCTION_ENV.athenaCatalog, athena.catalog);
    if (athena.outputLocation) this.fn.addEnvironment(FUNCTION_ENV.athenaOutputLocation, athena.outputLocation);
    if (athena.schemaDescription) this.fn.addEnvironment(FUNCTION_ENV.athenaSchemaDescription, athena.schemaDescription);
  }

  /** Runs `search_documents` on a Bedrock knowledge base: `bedrock:Retrieve` on that one only. */
  useKnowledgeBase(knowledgeBase: NonNullable<StageToolsConfig["knowledgeBase"]>, arn: string): void {
    this.allow(["bedrock:Retrieve"], [arn]);
    this.fn.addEnvironment(FUNCTION_ENV.documentsEngine, "bedrock-kb");
    this.fn.addEnvironment(FUNCTION_ENV.knowledgeBaseId, knowledgeBase.id);
    // Unset, the tools use the function's own region, which the ARN above names too.
    if (knowledgeBase.region) this.fn.addEnvironment(FUNCTION_ENV.knowledgeBaseRegion, knowledgeBase.region);
  }

  /**
   * Offers `query_semantic_model`. No IAM grant: Power BI is outside AWS, and its client id and
   * secret are read from the credentials secret that `useSecret` already grants.
   */
  usePowerBi(powerBi: NonNullable<StageToolsConfig["powerBi"]>): void {
    this.fn.addEnvironment(FUNCTION_ENV.powerBiTenantId, powerBi.tenantId);
    this.fn.addEnvironment(FUNCTION_ENV.powerBiGroupId, powerBi.groupId);
    this.fn.addEnvironment(FUNCTION_ENV.powerBiDatasetId, powerBi.datasetId);
  }

  /** Offers no tool of this kind: its local default (SQLite sample data, bundled handbook) is not for AWS. */
  withoutTool(kind: "sql" | "documents"): void {
    if (kind === "sql") this.fn.addEnvironment(FUNCTION_ENV.sqlEngine, "none");
    else this.fn.addEnvironment(FUNCTION_ENV.documentsEngine, "none");
  }

  /** Posts follow-ups to this webhook (outside AWS: no grant). */
  useFollowUpWebhook(url: string): void {
    this.fn.addEnvironment(FUNCTION_ENV.followUpWebhookUrl, url);
  }

  /** Restricts tools to callers with these roles (`TOOL_ROLES` JSON). */
  useToolRoles(toolRoles: string): void {
    this.fn.addEnvironment(FUNCTION_ENV.toolRoles, toolRoles);
  }

  /** Holds tool calls for a person's decision (`TOOL_APPROVALS` JSON, docs/approvals.md). */
  useToolApprovals(toolApprovals: string): void {
    this.fn.addEnvironment(FUNCTION_ENV.toolApprovals, toolApprovals);
  }

  /** Gives Slack and Teams users their roles (`SLACK_ROLES`, `TEAMS_ROLES` JSON), looked up when their turns run. */
  useChannelRoles(roles: { slack?: string; teams?: string }): void {
    if (roles.slack) this.fn.addEnvironment(FUNCTION_ENV.slackRoles, roles.slack);
    if (roles.teams) this.fn.addEnvironment(FUNCTION_ENV.teamsRoles, roles.teams);
  }

  /**
   * The {@link LIVE_ALIAS} alias on the function's current version: what serves traffic, so that a
   * deploy can shift it from one version to the next (`deployGradually`).
   */
  get alias(): Alias {
    this.live ??= new Alias(this, "Live", { aliasName: LIVE_ALIAS, version: this.fn.currentVersion });
    return this.live;
  }

  /**
   * Shifts the alias to each new version through CodeDeploy as `deploymentConfig` says, and rolls
   * back when one of `alarms` fires meanwhile. CodeDeploy gets its own role with only what it does
   * to this alias (not its managed policy, whose grants cover every function).
   */
  deployGradually(application: ILambdaApplication, deploymentConfig: ILambdaDeploymentConfig, alarms: IAlarm[]): LambdaDeploymentGroup {
    const role = new Role(this, "DeploymentRole", {
      assumedBy: new ServicePrincipal("codedeploy.amazonaws.com"),
      description: `${this.fn.node.path}: CodeDeploy shifts its ${LIVE_ALIAS} alias and reads its rollback alarms`,
    });
    role.addToPolicy(new PolicyStatement({ effect: Effect.ALLOW, actions: [...CODEDEPLOY_ALIAS_ACTIONS], resources: [this.alias.functionArn] }));
    role.addToPolicy(new PolicyStatement({ effect: Effect.ALLOW, actions: ["cloudwatch:DescribeAlarms"], resources: ["*"] }));
    Validations.of(role).acknowledge({
      id: "AwsSolutions-IAM5[Resource::*]",
      reason: "CloudWatch's DescribeAlarms takes no resource narrower than *; CodeDeploy reads the rollback alarms with it and nothing else is granted on *.",
    });
    return new LambdaDeploymentGroup(this, "Deployment", {
      application,
      alias: this.alias,
      deploymentConfig,
      alarms,
      // An immutable view: CodeDeploy's construct would otherwise attach the broad managed policy.
      role: role.withoutPolicyUpdates(),
      autoRollback: { failedDeployment: true, stoppedDeployment: true, deploymentInAlarm: true },
    });
  }

  /**
   * Runs one turn per invocation from the FIFO queue, through the live alias. One message per
   * batch keeps a long turn from holding back other conversations' turns; failures are still
   * reported per item.
   */
  consumeTurnQueue(queue: IQueue, maxConcurrency: number): void {
    this.alias.addEventSource(new SqsEventSource(queue, { batchSize: 1, reportBatchItemFailures: true, maxConcurrency }));
    // The event source grants ChangeMessageVisibility; the worker uses it to time its retries.
    this.fn.addEnvironment(FUNCTION_ENV.turnQueueUrl, queue.queueUrl);
  }

  private allow(actions: readonly string[], resources: string[]): void {
    this.role.addToPolicy(new PolicyStatement({ effect: Effect.ALLOW, actions: [...actions], resources }));
  }
}
