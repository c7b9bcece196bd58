import { Duration, RemovalPolicy } from "aws-cdk-lib";
import { Effect, PolicyStatement, Role, ServicePrincipal } from "aws-cdk-lib/aws-iam";
import { Architecture, Runtime } from "aws-cdk-lib/aws-lambda";
import { SqsEventSource } from "aws-cdk-lib/aws-lambda-event-sources";
import { NodejsFunction } from "aws-cdk-lib/aws-lambda-nodejs";
import { LogGroup, type RetentionDays } from "aws-cdk-lib/aws-logs";
import type { ISecret } from "aws-cdk-lib/aws-secretsmanager";
import type { IQueue } from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";
import { FUNCTION_BUNDLING } from "../bundling/bundling.js";

/** Runtime of every function; the bundle target in bundling.ts matches it. */
export const FUNCTION_RUNTIME = Runtime.NODEJS_22_X;

/** Environment variable names set by the stack, each next to the grant that makes it usable. */
export const FUNCTION_ENV = {
  secretArn: "SECRET_ARN",
  turnQueueUrl: "TURN_QUEUE_URL",
  modelProvider: "MODEL_PROVIDER",
  bedrockModelId: "BEDROCK_MODEL_ID",
} as const;

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
}

/**
 * A handler in functions/ as a Lambda function: Node.js 22 on arm64, ESM bundle with source maps,
 * its own log group with retention, and a role that can write only to that log group until one
 * of the `use*` methods adds a grant together with the variable that needs it.
 */
export class ThreadwiseFunction extends Construct {
  readonly fn: NodejsFunction;
  readonly role: Role;
  readonly logGroup: LogGroup;

  constructor(scope: Construct, id: string, props: ThreadwiseFunctionProps) {
    super(scope, id);
    const functionName = `${props.stage}-threadwise-${props.name}`;
    this.logGroup = new LogGroup(this, "Logs", {
      logGroupName: `/aws/lambda/${functionName}`,
      retention: props.logRetention,
      removalPolicy: props.removalPolicy,
    });
    // An own role instead of AWSLambdaBasicExecutionRole, whose log grant covers every log group.
    this.role = new Role(this, "Role", {
      assumedBy: new ServicePrincipal("lambda.amazonaws.com"),
      description: `${functionName}: its log group and the grants added by the stack`,
    });
    this.logGroup.grantWrite(this.role);
    this.fn = new NodejsFunction(this, "Function", {
      functionName,
      description: props.description,
      entry: props.entry,
      handler: "handler",
      runtime: FUNCTION_RUNTIME,
      architecture: Architecture.ARM_64,
      memorySize: props.memorySize,
      timeout: props.timeout,
      role: this.role,
      logGroup: this.logGroup,
      bundling: FUNCTION_BUNDLING,
      environment: {
        ...props.environment,
        // Maps minified stack traces back to TypeScript lines in the logs.
        NODE_OPTIONS: "--enable-source-maps",
      },
    });
  }

  /** Reads the credentials secret (the MongoDB URI and channel tokens live there, never in the environment). */
  useSecret(secret: ISecret): void {
    secret.grantRead(this.fn);
    this.fn.addEnvironment(FUNCTION_ENV.secretArn, secret.secretArn);
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

  /**
   * Runs one turn per invocation from the FIFO queue. One message per batch keeps a long turn from
   * holding back other conversations' turns; failures are still reported per item.
   */
  consumeTurnQueue(queue: IQueue, maxConcurrency: number): void {
    this.fn.addEventSource(
      new SqsEventSource(queue, { batchSize: 1, reportBatchItemFailures: true, maxConcurrency }),
    );
    // The event source grants ChangeMessageVisibility; the worker uses it to time its retries.
    this.fn.addEnvironment(FUNCTION_ENV.turnQueueUrl, queue.queueUrl);
  }
}
