import { Annotations, Match, Template } from "aws-cdk-lib/assertions";
import { AUTHORIZED_ROUTES } from "../../infra/constructs/threadwise-api.js";
import { METRICS_NAMESPACE, TURN_METRICS } from "../../infra/constructs/operations.js";
import { loadToolsConfig } from "../../lib/config/tools-config.js";
import { buildStack, synthTemplate } from "./synth.js";

const ISSUER = "https://login.example.com/tenant/v2.0";
const prodContext = { stage: "prod", jwtIssuer: ISSUER, jwtAudience: "api://threadwise" };
const IMPORTED_SECRET = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/threadwise/credentials-AbC123";

/** Statements of the policy attached to the role of the named function. */
function statementsOf(template: ReturnType<typeof synthTemplate>, functionLogicalPrefix: string): { Action: string | string[]; Resource: unknown }[] {
  const policies = template.findResources("AWS::IAM::Policy");
  const entry = Object.entries(policies).find(([id]) => id.startsWith(`${functionLogicalPrefix}FunctionRoleDefaultPolicy`));
  if (!entry) throw new Error(`no policy for ${functionLogicalPrefix}`);
  return entry[1].Properties.PolicyDocument.Statement;
}
const actionsOf = (statements: { Action: string | string[] }[]) => statements.flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action]));

/** A template value as a string, pseudo parameters as `${AWS::Region}`: what an ARN will read once deployed. */
function render(value: unknown): string {
  if (typeof value === "string") return value;
  const v = value as { Ref?: string; "Fn::Join"?: [string, unknown[]] };
  if (v.Ref) return `\${${v.Ref}}`;
  if (v["Fn::Join"]) return v["Fn::Join"][1].map(render).join(v["Fn::Join"][0]);
  throw new Error(`cannot render ${JSON.stringify(value)}`);
}

/** The named function's statements whose actions are in these services, actions and resources rendered. */
function grantsOf(template: Template, functionLogicalPrefix: string, services: string[]): { actions: string[]; resources: string[] }[] {
  return statementsOf(template, functionLogicalPrefix)
    .filter((s) => actionsOf([s]).some((a) => services.includes(a.split(":")[0])))
    .map((s) => ({ actions: actionsOf([s]), resources: (Array.isArray(s.Resource) ? s.Resource : [s.Resource]).map(render) }));
}

/** Function environments by short name (api, worker, slack, teams), token values left out. */
function environmentsOf(template: Template): Record<string, Record<string, string>> {
  const result: Record<string, Record<string, string>> = {};
  for (const fn of Object.values(template.findResources("AWS::Lambda::Function"))) {
    const vars = fn.Properties.Environment.Variables as Record<string, unknown>;
    const name = String(fn.Properties.FunctionName).replace(/^.*-threadwise-/, "");
    result[name] = Object.fromEntries(Object.entries(vars).filter((e): e is [string, string] => typeof e[1] === "string"));
  }
  return result;
}

/** Every variable a tool engine reads, as lib/config/tools-config.ts names them. */
const TOOL_VARIABLES = /^(SQL_ENGINE|ATHENA_|DOCUMENTS_ENGINE|BEDROCK_KB_|POWERBI_|FOLLOW_UP_WEBHOOK_URL|TOOL_ROLES)/;
const TOOL_SERVICES = ["athena", "glue", "s3"];

const ARN = "arn:${AWS::Partition}";
const HERE = "${AWS::Region}:${AWS::AccountId}";
const toolsContext = {
  ...prodContext,
  athenaWorkgroup: "analytics",
  athenaDatabase: "sales",
  athenaOutputLocation: "s3://tw-results/athena/threadwise/",
  athenaDataBucketArns: "arn:aws:s3:::tw-lake,arn:aws:s3:::tw-lake-archive",
  athenaSchemaDescription: "orders(order_id, customer_id, order_date), order_lines(order_id, product_id, quantity, unit_price, unit_cost)",
  knowledgeBaseId: "KB12345678",
  knowledgeBaseRegion: "us-west-2",
  powerBiTenantId: "contoso.onmicrosoft.com",
  powerBiGroupId: "0f8e7c1a-2b3c-4d5e-8f90-a1b2c3d4e5f6",
  powerBiDatasetId: "9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d",
  followUpWebhookUrl: "https://hooks.example.com/follow-ups",
  toolRoles: '{"create_follow_up":["analyst"]}',
};

describe("ThreadwiseStack", () => {
  const template = synthTemplate({ context: prodContext });

  describe("functions", () => {
    it("runs four Node.js 22 arm64 functions named after the stage", () => {
      template.resourceCountIs("AWS::Lambda::Function", 4);
      for (const name of ["api", "worker", "slack", "teams"]) {
        template.hasResourceProperties("AWS::Lambda::Function", {
          FunctionName: `prod-threadwise-${name}`,
          Runtime: "nodejs22.x",
          Architectures: ["arm64"],
          Handler: "index.handler",
          Environment: { Variables: Match.objectLike({ NODE_OPTIONS: "--enable-source-maps", POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE }) },
        });
      }
    });

    it("gives each function a log group with the configured retention, kept in prod", () => {
      template.hasResource("AWS::Logs::LogGroup", {
        Properties: { LogGroupName: "/aws/lambda/prod-threadwise-worker", RetentionInDays: 30 },
        DeletionPolicy: "Retain",
      });
    });

    it("stops the api function before API Gateway's 30 second limit", () => {
      template.hasResourceProperties("AWS::Lambda::Function", { FunctionName: "prod-threadwise-api", Timeout: 29 });
    });

    it("passes the secret's ARN, never its value, to every function", () => {
      const functions = template.findResources("AWS::Lambda::Function");
      for (const fn of Object.values(functions)) {
        const vars = fn.Properties.Environment.Variables as Record<string, unknown>;
        expect(vars.SECRET_ARN).toBeDefined();
        expect(Object.keys(vars)).not.toContain("MONGODB_URI");
      }
    });

    it("tells the worker its queue (for retry delays) and every function to insist on TLS to MongoDB", () => {
      template.hasResourceProperties("AWS::Lambda::Function", {
        FunctionName: "prod-threadwise-worker",
        Environment: { Variables: Match.objectLike({ TURN_QUEUE_URL: Match.anyValue(), MONGODB_REQUIRE_TLS: "true", TURN_MAX_RECEIVES: "3" }) },
      });
    });

    it("feeds the worker one turn per invocation with partial batch failures", () => {
      template.hasResourceProperties("AWS::Lambda::EventSourceMapping", {
        BatchSize: 1,
        FunctionResponseTypes: ["ReportBatchItemFailures"],
        ScalingConfig: { MaximumConcurrency: 10 },
      });
    });
  });

  describe("permissions", () => {
    it("lets the api and the worker invoke only the configured Bedrock profile and its model", () => {
      for (const fn of ["Api", "Worker"]) {
        const bedrock = statementsOf(template, fn).filter((s) => actionsOf([s]).some((a) => a.startsWith("bedrock:")));
        expect(bedrock).toHaveLength(1);
        expect(bedrock[0].Action).toEqual(["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"]);
        expect(JSON.stringify(bedrock[0].Resource)).toContain("inference-profile/us.anthropic.claude-sonnet-4-20250514-v1:0");
        expect(JSON.stringify(bedrock[0].Resource)).toContain(":bedrock:*::foundation-model/anthropic.claude-sonnet-4-20250514-v1:0");
      }
    });

    it("gives the webhook functions no Bedrock access", () => {
      for (const fn of ["Slack", "Teams"]) {
        expect(actionsOf(statementsOf(template, fn)).filter((a) => a.startsWith("bedrock:"))).toEqual([]);
      }
    });

    it("lets only the ingress functions send turns and only the worker receive them", () => {
      for (const fn of ["Api", "Slack", "Teams"]) expect(actionsOf(statementsOf(template, fn))).toContain("sqs:SendMessage");
      const worker = actionsOf(statementsOf(template, "Worker"));
      expect(worker).toContain("sqs:ReceiveMessage");
      expect(worker).not.toContain("sqs:SendMessage");
    });

    it("uses no AWS managed policies", () => {
      const roles = template.findResources("AWS::IAM::Role");
      for (const role of Object.values(roles)) expect(role.Properties.ManagedPolicyArns).toBeUndefined();
    });

    it("grants only an imported secret's ARN when one is given", () => {
      const imported = synthTemplate({ context: { ...prodContext, secretArn: IMPORTED_SECRET } });
      imported.resourceCountIs("AWS::SecretsManager::Secret", 0);
      const secretStatement = statementsOf(imported, "Worker").find((s) => actionsOf([s]).includes("secretsmanager:GetSecretValue"));
      expect(secretStatement?.Resource).toBe(IMPORTED_SECRET);
    });

    it("creates the secret, named after the stage, when none is given", () => {
      template.hasResourceProperties("AWS::SecretsManager::Secret", { Name: "prod/threadwise/credentials" });
    });
  });

  describe("tools", () => {
    const withTools = synthTemplate({ context: toolsContext });

    it("adds no Athena, Glue, S3 or knowledge base grant to any function without tool context", () => {
      for (const fn of ["Api", "Worker", "Slack", "Teams"]) {
        const actions = actionsOf(statementsOf(template, fn));
        expect(actions.filter((a) => TOOL_SERVICES.includes(a.split(":")[0]) || a === "bedrock:Retrieve"), fn).toEqual([]);
      }
    });

    it("turns off the local-only SQL and document tools on the api and the worker, and sets no other tool variable, without tool context", () => {
      const envs = environmentsOf(template);
      for (const name of ["api", "worker"]) {
        const tools = Object.fromEntries(Object.entries(envs[name]).filter(([k]) => TOOL_VARIABLES.test(k)));
        expect(tools, name).toEqual({ SQL_ENGINE: "none", DOCUMENTS_ENGINE: "none" });
      }
      for (const name of ["slack", "teams"]) {
        expect(Object.keys(envs[name]).filter((k) => TOOL_VARIABLES.test(k)), name).toEqual([]);
      }
    });

    it("keeps the sample SQL and document tools on the api and the worker when the stage asks for them", () => {
      const envs = environmentsOf(synthTemplate({ context: { sampleTools: "true" } }));
      for (const name of ["api", "worker"]) {
        expect(Object.keys(envs[name]).filter((k) => TOOL_VARIABLES.test(k)), name).toEqual([]);
      }
    });

    it("lets the api and the worker run, read and stop queries in the configured workgroup only", () => {
      for (const fn of ["Api", "Worker"]) {
        expect(grantsOf(withTools, fn, ["athena"])).toEqual([
          {
            actions: ["athena:StartQueryExecution", "athena:GetQueryExecution", "athena:GetQueryResults", "athena:StopQueryExecution"],
            resources: [`${ARN}:athena:${HERE}:workgroup/analytics`],
          },
        ]);
      }
    });

    it("lets the api and the worker read the Glue catalog, the database and its tables only", () => {
      for (const fn of ["Api", "Worker"]) {
        expect(grantsOf(withTools, fn, ["glue"])).toEqual([
          {
            actions: ["glue:GetDatabase", "glue:GetTable", "glue:GetTables", "glue:GetPartitions"],
            resources: [`${ARN}:glue:${HERE}:catalog`, `${ARN}:glue:${HERE}:database/sales`, `${ARN}:glue:${HERE}:table/sales/*`],
          },
        ]);
      }
    });

    it("lets the api and the worker read the data buckets and read and write under the results prefix only", () => {
      for (const fn of ["Api", "Worker"]) {
        expect(grantsOf(withTools, fn, ["s3"])).toEqual([
          { actions: ["s3:GetBucketLocation", "s3:ListBucket"], resources: ["arn:aws:s3:::tw-lake", "arn:aws:s3:::tw-lake-archive"] },
          { actions: ["s3:GetObject"], resources: ["arn:aws:s3:::tw-lake/*", "arn:aws:s3:::tw-lake-archive/*"] },
          { actions: ["s3:GetBucketLocation", "s3:ListBucket", "s3:ListBucketMultipartUploads"], resources: [`${ARN}:s3:::tw-results`] },
          {
            actions: ["s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"],
            resources: [`${ARN}:s3:::tw-results/athena/threadwise/*`],
          },
        ]);
      }
    });

    it("grants the whole results bucket when only athenaResultsBucket is given", () => {
      const context = { ...toolsContext, athenaOutputLocation: "", athenaResultsBucket: "tw-workgroup-results" };
      const objects = grantsOf(synthTemplate({ context }), "Worker", ["s3"]).find((g) => g.actions.includes("s3:PutObject"));
      expect(objects?.resources).toEqual([`${ARN}:s3:::tw-workgroup-results/*`]);
      expect(environmentsOf(synthTemplate({ context })).worker.ATHENA_OUTPUT_LOCATION).toBeUndefined();
    });

    it("lets the api and the worker retrieve from the configured knowledge base only", () => {
      for (const fn of ["Api", "Worker"]) {
        const retrieve = grantsOf(withTools, fn, ["bedrock"]).filter((g) => g.actions.includes("bedrock:Retrieve"));
        expect(retrieve).toEqual([{ actions: ["bedrock:Retrieve"], resources: [`${ARN}:bedrock:us-west-2:\${AWS::AccountId}:knowledge-base/KB12345678`] }]);
      }
    });

    it("sets on the api and the worker exactly the variables the tools read back as the configured engines", () => {
      const envs = environmentsOf(withTools);
      for (const name of ["api", "worker"]) {
        const tools = Object.fromEntries(Object.entries(envs[name]).filter(([k]) => TOOL_VARIABLES.test(k)));
        expect(tools).toEqual({
          SQL_ENGINE: "athena",
          ATHENA_WORKGROUP: "analytics",
          ATHENA_DATABASE: "sales",
          ATHENA_CATALOG: "AwsDataCatalog",
          ATHENA_OUTPUT_LOCATION: "s3://tw-results/athena/threadwise/",
          ATHENA_SCHEMA_DESCRIPTION: toolsContext.athenaSchemaDescription,
          DOCUMENTS_ENGINE: "bedrock-kb",
          BEDROCK_KB_ID: "KB12345678",
          BEDROCK_KB_REGION: "us-west-2",
          POWERBI_TENANT_ID: "contoso.onmicrosoft.com",
          POWERBI_GROUP_ID: toolsContext.powerBiGroupId,
          POWERBI_DATASET_ID: toolsContext.powerBiDatasetId,
          FOLLOW_UP_WEBHOOK_URL: "https://hooks.example.com/follow-ups",
          TOOL_ROLES: '{"create_follow_up":["analyst"]}',
        });
        // Lambda sets AWS_REGION; the rest is what the stack set.
        const config = loadToolsConfig({ ...envs[name], AWS_REGION: "eu-west-1" });
        expect(config.sql).toMatchObject({ engine: "athena", workgroup: "analytics", database: "sales", region: "eu-west-1" });
        expect(config.documents).toMatchObject({ engine: "bedrock-kb", knowledgeBaseId: "KB12345678", region: "us-west-2" });
        expect(config.powerBi).toMatchObject({ tenantId: "contoso.onmicrosoft.com", clientIdSecret: "powerBiClientId" });
        expect(config.followUpWebhookUrl).toBe("https://hooks.example.com/follow-ups");
        expect(config.roles).toEqual({ create_follow_up: ["analyst"] });
      }
    });

    it("gives the webhook functions no tool grant or variable", () => {
      const envs = environmentsOf(withTools);
      for (const fn of ["Slack", "Teams"]) {
        const actions = actionsOf(statementsOf(withTools, fn));
        expect(actions.filter((a) => TOOL_SERVICES.includes(a.split(":")[0]) || a === "bedrock:Retrieve"), fn).toEqual([]);
        expect(Object.keys(envs[fn.toLowerCase()]).filter((k) => TOOL_VARIABLES.test(k)), fn).toEqual([]);
      }
    });

    it("warns at synth about the grants it cannot derive: another catalog, no results location, no data buckets", () => {
      const { stack } = buildStack({ context: { ...prodContext, athenaWorkgroup: "analytics", athenaDatabase: "sales", athenaCatalog: "partner_catalog" } });
      const annotations = Annotations.fromStack(stack);
      for (const text of ["no Glue grant", "no S3 grant for query results", "no S3 read grant on the tables' data"]) {
        annotations.hasWarning("*", Match.stringLikeRegexp(text));
      }
      expect(grantsOf(Template.fromStack(stack), "Api", ["glue", "s3"])).toEqual([]);
    });

    it("does not warn when the Athena grants are complete", () => {
      const { stack } = buildStack({ context: toolsContext });
      Annotations.fromStack(stack).hasNoWarning("*", Match.stringLikeRegexp("athena|Glue|S3"));
    });
  });

  describe("api", () => {
    it("authorizes with a JWT authorizer for the configured issuer and audience", () => {
      template.hasResourceProperties("AWS::ApiGatewayV2::Authorizer", {
        AuthorizerType: "JWT",
        IdentitySource: ["$request.header.Authorization"],
        JwtConfiguration: { Issuer: ISSUER, Audience: ["api://threadwise"] },
      });
    });

    it("puts every /v1 route behind the authorizer", () => {
      for (const route of AUTHORIZED_ROUTES) {
        template.hasResourceProperties("AWS::ApiGatewayV2::Route", {
          RouteKey: `${route.method} ${route.path}`,
          AuthorizationType: "JWT",
          AuthorizerId: Match.anyValue(),
        });
      }
    });

    it("leaves /healthz and the webhooks to the functions", () => {
      for (const key of ["GET /healthz", "POST /slack/events", "POST /teams/messages"]) {
        template.hasResourceProperties("AWS::ApiGatewayV2::Route", { RouteKey: key, AuthorizationType: "NONE" });
      }
      template.resourceCountIs("AWS::ApiGatewayV2::Route", AUTHORIZED_ROUTES.length + 3);
    });

    it("writes JSON access logs with the request id", () => {
      template.hasResourceProperties("AWS::ApiGatewayV2::Stage", {
        StageName: "$default",
        AccessLogSettings: { DestinationArn: Match.anyValue(), Format: Match.stringLikeRegexp('"requestId":"\\$context.requestId"') },
      });
    });
  });

  describe("queue", () => {
    it("is FIFO with explicit deduplication ids, SQS-managed encryption and a dead-letter queue", () => {
      template.hasResourceProperties("AWS::SQS::Queue", {
        QueueName: "prod-threadwise-turns.fifo",
        FifoQueue: true,
        ContentBasedDeduplication: false,
        SqsManagedSseEnabled: true,
        VisibilityTimeout: 1800,
        RedrivePolicy: { deadLetterTargetArn: Match.anyValue(), maxReceiveCount: 3 },
      });
      template.hasResourceProperties("AWS::SQS::Queue", {
        QueueName: "prod-threadwise-turns-dlq.fifo",
        FifoQueue: true,
        SqsManagedSseEnabled: true,
      });
    });

    it("refuses requests without TLS", () => {
      template.hasResourceProperties("AWS::SQS::QueuePolicy", {
        PolicyDocument: {
          Statement: Match.arrayWith([
            Match.objectLike({ Effect: "Deny", Condition: { Bool: { "aws:SecureTransport": "false" } } }),
          ]),
        },
      });
    });
  });

  describe("operations", () => {
    it("alarms on any message in the dead-letter queue", () => {
      const alarms = template.findResources("AWS::CloudWatch::Alarm", {
        Properties: { MetricName: "ApproximateNumberOfMessagesVisible", Namespace: "AWS/SQS", Threshold: 1 },
      });
      const [alarm] = Object.values(alarms);
      expect(JSON.stringify(alarm.Properties.Dimensions)).toContain("TurnQueuesDeadLetters");
    });

    it("alarms on errors and throttles of every function", () => {
      for (const metric of ["Errors", "Throttles"]) {
        const alarms = template.findResources("AWS::CloudWatch::Alarm", { Properties: { MetricName: metric, Namespace: "AWS/Lambda" } });
        expect(Object.keys(alarms)).toHaveLength(4);
      }
    });

    it("alarms on API 5xx responses", () => {
      template.hasResourceProperties("AWS::CloudWatch::Alarm", { MetricName: "5xx", Namespace: "AWS/ApiGateway" });
    });

    it("shows every per-turn metric on the stage's dashboard", () => {
      const [dashboard] = Object.values(template.findResources("AWS::CloudWatch::Dashboard"));
      expect(dashboard.Properties.DashboardName).toBe("prod-threadwise");
      const body = JSON.stringify(dashboard.Properties.DashboardBody);
      for (const metric of Object.values(TURN_METRICS)) expect(body).toContain(`\\"${METRICS_NAMESPACE}\\",\\"${metric}\\"`);
    });

    it("notifies the alarm topic when one is configured", () => {
      const topic = "arn:aws:sns:eu-west-1:123456789012:ops";
      const withTopic = synthTemplate({ context: { ...prodContext, alarmTopicArn: topic } });
      const alarms = Object.values(withTopic.findResources("AWS::CloudWatch::Alarm"));
      expect(alarms.every((a) => JSON.stringify(a.Properties.AlarmActions) === JSON.stringify([topic]))).toBe(true);
    });
  });

  describe("stages", () => {
    it("names a dev stack's resources dev and lets them be deleted with it", () => {
      const dev = synthTemplate();
      dev.hasResourceProperties("AWS::SQS::Queue", { QueueName: "dev-threadwise-turns.fifo" });
      dev.hasResource("AWS::SecretsManager::Secret", { DeletionPolicy: "Delete" });
    });
  });
});
