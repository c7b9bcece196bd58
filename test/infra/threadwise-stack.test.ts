import { Match } from "aws-cdk-lib/assertions";
import { AUTHORIZED_ROUTES } from "../../infra/constructs/threadwise-api.js";
import { METRICS_NAMESPACE, TURN_METRICS } from "../../infra/constructs/operations.js";
import { synthTemplate } from "./synth.js";

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
