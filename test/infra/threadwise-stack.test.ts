import { Annotations, Match, Template } from "aws-cdk-lib/assertions";
import { AUTHORIZED_ROUTES } from "../../infra/constructs/threadwise-api.js";
import { METRICS_NAMESPACE, TURN_METRICS } from "../../infra/constructs/operations.js";
import { loadConfig } from "../../lib/config/config.js";
import { loadToolsConfig } from "../../lib/config/tools-config.js";
import { CREDENTIAL_SECRET_NAMES, CREDENTIAL_SECRETS, type CredentialSecretName } from "../../lib/config/credentials.js";
import { DATABASE_SETUP_VERSION } from "../../lib/store/database.js";
import { FUNCTION_POOL_SIZES } from "../../infra/connection-budget.js";
import { MongoClient } from "mongodb";
import { adminMcpRoutes } from "../../lib/api/admin-mcp-routes.js";
import { memberRoutes } from "../../lib/api/member-routes.js";
import { lifecycleRoutes } from "../../lib/api/lifecycle-routes.js";
import { contentKeyRoutes } from "../../lib/api/content-key-routes.js";
import { adminRoutes } from "../../lib/api/admin-routes.js";
import { agentProtocolRoutes } from "../../lib/api/agent-protocol-routes.js";
import { apiRoutes } from "../../lib/api/api-routes.js";
import { channelRoutes } from "../../lib/api/channel-routes.js";
import { apiPrincipal } from "../../lib/auth/principal.js";
import type { Route } from "../../lib/api/router.js";
import { ChannelEventDeduper, channelHandlers } from "../../lib/channels/index.js";
import { ThreadwiseDatabase } from "../../lib/store/database.js";
import { buildStack, synthTemplate } from "./synth.js";
import { cycleIn, idOf, resourcesOf, statementsFor, variablesFor } from "./support/template-resources.js";
import { FUNCTION_ENV, MCP_OAUTH_KMS_ACTIONS } from "../../infra/constructs/threadwise-function.js";
import { MCP_OAUTH_CALLBACK_PATH } from "../../lib/config/mcp-oauth-config.js";
import { mcpRoutes } from "../../lib/api/mcp-routes.js";
import { mcpOAuthRoutes } from "../../lib/api/mcp-oauth-routes.js";
import { McpOAuth } from "../../lib/mcp/oauth/mcp-oauth.js";

const ISSUER = "https://login.example.com/tenant/v2.0";
const prodContext = { stage: "prod", jwtIssuer: ISSUER, jwtAudience: "api://threadwise", alarmEmails: "oncall@example.com" };
const IMPORTED_DATABASE_SECRET = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/threadwise/database-AbC123";
const IMPORTED_SECRETS_KEY = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab";
const FUNCTIONS = ["api", "worker", "slack", "teams", "setup", "stream"] as const;
const logicalPrefix = (name: string) => `${name[0].toUpperCase()}${name.slice(1)}`;

/** Statements of the policy attached to the role of the named function. */
function statementsOf(template: ReturnType<typeof synthTemplate>, functionLogicalPrefix: string): { Action: string | string[]; Resource: unknown }[] {
  const policies = template.findResources("AWS::IAM::Policy");
  const entry = Object.entries(policies).find(([id]) => id.startsWith(`${functionLogicalPrefix}FunctionRoleDefaultPolicy`));
  if (!entry) throw new Error(`no policy for ${functionLogicalPrefix}`);
  return entry[1].Properties.PolicyDocument.Statement;
}
/** Whether a statement's resource is the KMS key with this logical id. */
const onKey = (keyId: string) => (s: { Resource: unknown }) => JSON.stringify(s.Resource) === JSON.stringify({ "Fn::GetAtt": [keyId, "Arn"] });
/** The resource of the content-key statements: every key of the stage's account and region (tags narrow it). */
const CONTENT_KEYS_RESOURCE = "arn:${AWS::Partition}:kms:${AWS::Region}:${AWS::AccountId}:key/*";
/** Whether a statement's resource is every key of the account and region (the content keys' grants). */
const onContentKeys = (s: { Resource: unknown }) =>
  JSON.stringify(s.Resource) ===
  JSON.stringify({ "Fn::Join": ["", ["arn:", { Ref: "AWS::Partition" }, ":kms:", { Ref: "AWS::Region" }, ":", { Ref: "AWS::AccountId" }, ":key/*"]] });
const actionsOf = (statements: { Action: string | string[] }[]) => statements.flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action]));

/** A template value as a string, pseudo parameters as `${AWS::Region}`: what an ARN will read once deployed. */
function render(value: unknown): string {
  if (typeof value === "string") return value;
  const v = value as { Ref?: string; "Fn::Join"?: [string, unknown[]] };
  if (v.Ref) return `\${${v.Ref}}`;
  if (v["Fn::Join"]) return v["Fn::Join"][1].map(render).join(v["Fn::Join"][0]);
  throw new Error(`cannot render ${JSON.stringify(value)}`);
}

/** Grants with their actions and resources in order: IAM reads neither list in order, and CDK sorts them. */
const sortedGrants = (grants: { actions: string[]; resources: string[] }[]) =>
  grants.map((g) => ({ actions: [...g.actions].sort(), resources: [...g.resources].sort() }));

/** The named function's statements whose actions are in these services, actions and resources rendered and sorted. */
function grantsOf(template: Template, functionLogicalPrefix: string, services: string[]): { actions: string[]; resources: string[] }[] {
  return statementsOf(template, functionLogicalPrefix)
    .filter((s) => actionsOf([s]).some((a) => services.includes(a.split(":")[0])))
    .map((s) => ({ actions: actionsOf([s]).sort(), resources: (Array.isArray(s.Resource) ? s.Resource : [s.Resource]).map(render).sort() }));
}

/**
 * The credentials secrets each function may read (GetSecretValue), by short name: a created secret
 * is named by its `Name`, an imported one by its ARN.
 */
function secretReadsOf(template: Template): Record<string, string[]> {
  const names = new Map<string, string>();
  for (const [id, secret] of Object.entries(template.findResources("AWS::SecretsManager::Secret"))) {
    const kebab = String(secret.Properties.Name).replace(/^.*\/threadwise\//, "");
    names.set(id, CREDENTIAL_SECRET_NAMES.find((n) => CREDENTIAL_SECRETS[n].name === kebab) ?? kebab);
  }
  return Object.fromEntries(
    FUNCTIONS.map((name) => {
      const reads = statementsOf(template, logicalPrefix(name))
        .filter((s) => actionsOf([s]).includes("secretsmanager:GetSecretValue"))
        .flatMap((s) => (Array.isArray(s.Resource) ? s.Resource : [s.Resource]))
        .map((r) => (typeof r === "string" ? r : (names.get((r as { Ref: string }).Ref) ?? JSON.stringify(r))));
      return [name, reads.sort()];
    }),
  );
}

/** Route keys of the HTTP API by the function their integration invokes (api, slack, teams). */
function routeKeysByFunction(template: Template): Record<string, string[]> {
  const functionOf = new Map<string, string>();
  for (const [id, integration] of Object.entries(template.findResources("AWS::ApiGatewayV2::Integration"))) {
    const target = JSON.stringify(integration.Properties.IntegrationUri);
    functionOf.set(id, target.match(/"(Api|Slack|Teams)Function/)?.[1].toLowerCase() ?? target);
  }
  const result: Record<string, string[]> = {};
  for (const route of Object.values(template.findResources("AWS::ApiGatewayV2::Route"))) {
    const integrationId = JSON.stringify(route.Properties.Target).match(/"Ref":"([^"]+)"/)?.[1] ?? "";
    (result[functionOf.get(integrationId) ?? "none"] ??= []).push(route.Properties.RouteKey);
  }
  return result;
}

/** Whether the router's routes and the template's route keys name the same (method, path) pairs, both ways. */
function unmatched(routes: Route[], keys: string[]): { notInApi: string[]; notInRouter: string[] } {
  const sample = (path: string) => path.replace(/\{[^}]+\}/g, "00000000-0000-4000-8000-000000000000");
  const pairs = keys.map((key) => key.split(" ") as [string, string]);
  return {
    notInApi: routes.filter((r) => !pairs.some(([method, path]) => method === r.method && r.pattern.test(sample(path)))).map((r) => `${r.method} ${r.pattern}`),
    notInRouter: keys.filter((key) => {
      const [method, path] = key.split(" ");
      return !routes.some((r) => r.method === method && r.pattern.test(sample(path)));
    }),
  };
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
    it("runs six Node.js 22 arm64 functions named after the stage", () => {
      template.resourceCountIs("AWS::Lambda::Function", 6);
      for (const name of FUNCTIONS) {
        template.hasResourceProperties("AWS::Lambda::Function", {
          FunctionName: `prod-threadwise-${name}`,
          Runtime: "nodejs22.x",
          Architectures: ["arm64"],
          Handler: "index.handler",
          Environment: { Variables: Match.objectLike({ NODE_OPTIONS: "--enable-source-maps", POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE }) },
        });
      }
    });

    it("gives each function a log group of its own with the configured retention, kept in prod under a name a redeploy does not reuse", () => {
      const groups = template.findResources("AWS::Logs::LogGroup");
      for (const name of FUNCTIONS) {
        const fn = Object.values(template.findResources("AWS::Lambda::Function")).find((f) => f.Properties.FunctionName === `prod-threadwise-${name}`)!;
        const group = groups[fn.Properties.LoggingConfig.LogGroup.Ref as string];
        expect(group, name).toMatchObject({ Properties: { RetentionInDays: 30 }, DeletionPolicy: "Retain" });
      }
      // A fixed name would collide with the retained group when the stack is deleted and deployed again.
      expect(Object.values(groups).filter((g) => g.Properties.LogGroupName !== undefined)).toEqual([]);
    });

    it("stops the api function before API Gateway's 30 second limit", () => {
      template.hasResourceProperties("AWS::Lambda::Function", { FunctionName: "prod-threadwise-api", Timeout: 29 });
    });

    it("passes every function its database secret's ARN, never a URI", () => {
      const functions = template.findResources("AWS::Lambda::Function");
      for (const fn of Object.values(functions)) {
        const vars = fn.Properties.Environment.Variables as Record<string, unknown>;
        expect(vars.DATABASE_SECRET_ARN).toEqual({ Ref: expect.stringMatching(/^CredentialsDatabase/) });
        expect(Object.keys(vars)).not.toContain("MONGODB_URI");
      }
    });

    it("tells the worker its queue (for retry delays) and every function to insist on TLS to MongoDB", () => {
      template.hasResourceProperties("AWS::Lambda::Function", {
        FunctionName: "prod-threadwise-worker",
        Environment: {
          Variables: Match.objectLike({ TURN_QUEUE_URL: Match.anyValue(), MONGODB_REQUIRE_TLS: "true", TURN_MAX_RECEIVES: "3", SYNC_TURN_MAX_MS: "28000" }),
        },
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

    it("sets no embeddings model and grants none while recallEmbeddingsModelId is unset", () => {
      for (const env of Object.values(environmentsOf(template))) expect(env.RECALL_EMBEDDINGS_MODEL_ID).toBeUndefined();
    });

    it("lets the api and the worker invoke the recall embeddings model, that model only, and tells them its id", () => {
      const embeddings = synthTemplate({ context: { ...prodContext, recallEmbeddingsModelId: "amazon.titan-embed-text-v2:0" } });
      const environments = environmentsOf(embeddings);
      for (const fn of ["Api", "Worker"]) {
        expect(grantsOf(embeddings, fn, ["bedrock"])).toContainEqual({
          actions: ["bedrock:InvokeModel"],
          resources: [`${ARN}:bedrock:\${AWS::Region}::foundation-model/amazon.titan-embed-text-v2:0`],
        });
        expect(environments[fn.toLowerCase()].RECALL_EMBEDDINGS_MODEL_ID).toBe("amazon.titan-embed-text-v2:0");
      }
      for (const fn of ["Slack", "Teams", "Setup"]) {
        expect(actionsOf(statementsOf(embeddings, fn)).filter((a) => a.startsWith("bedrock:"))).toEqual([]);
        expect(environments[fn.toLowerCase()].RECALL_EMBEDDINGS_MODEL_ID).toBeUndefined();
      }
    });

    it("gives the webhook functions no Bedrock access", () => {
      for (const fn of ["Slack", "Teams"]) {
        expect(actionsOf(statementsOf(template, fn)).filter((a) => a.startsWith("bedrock:"))).toEqual([]);
      }
    });

    it("lets the ingress functions send turns, and the worker receive them and send the turns its recovery sweep resumes", () => {
      for (const fn of ["Api", "Slack", "Teams", "Worker"]) expect(actionsOf(statementsOf(template, fn)), fn).toContain("sqs:SendMessage");
      expect(actionsOf(statementsOf(template, "Worker"))).toContain("sqs:ReceiveMessage");
      for (const fn of ["Api", "Slack", "Teams"]) expect(actionsOf(statementsOf(template, fn)), fn).not.toContain("sqs:ReceiveMessage");
    });

    it("uses no AWS managed policies", () => {
      const roles = template.findResources("AWS::IAM::Role");
      for (const role of Object.values(roles)) expect(role.Properties.ManagedPolicyArns).toBeUndefined();
    });
  });

  describe("credentials secrets", () => {
    it("creates each secret from its JSON template, every key empty, named after the stage", () => {
      const secrets = Object.values(template.findResources("AWS::SecretsManager::Secret")).map((s) => [
        s.Properties.Name,
        JSON.parse(s.Properties.SecretString),
      ]);
      expect(Object.fromEntries(secrets)).toEqual({
        "prod/threadwise/database": { mongodbUri: "" },
        "prod/threadwise/slack-signing": { slackSigningSecret: "" },
        "prod/threadwise/teams-bot": { teamsAppId: "", teamsTenantId: "" },
        "prod/threadwise/channel-replies": { slackBotToken: "", teamsAppPassword: "" },
      });
    });

    it("creates the Power BI secret, with its keys, only where query_semantic_model is offered", () => {
      const [powerBi] = Object.values(
        synthTemplate({ context: toolsContext }).findResources("AWS::SecretsManager::Secret", { Properties: { Name: "prod/threadwise/power-bi" } }),
      );
      expect(JSON.parse(powerBi.Properties.SecretString)).toEqual({ powerBiClientId: "", powerBiClientSecret: "" });
    });

    it("lets each function read only the secrets whose keys it uses", () => {
      expect(secretReadsOf(template)).toEqual({
        api: ["database"],
        worker: ["channelReplies", "database", "teamsBot"],
        slack: ["channelReplies", "database", "slackSigning"],
        teams: ["channelReplies", "database", "teamsBot"],
        setup: ["database"],
        stream: ["database"],
      });
    });

    it("lets only the functions that run turns (api, worker, stream) read the Power BI secret", () => {
      const reads = secretReadsOf(synthTemplate({ context: toolsContext }));
      expect(FUNCTIONS.filter((name) => reads[name].includes("powerBi"))).toEqual(["api", "worker", "stream"]);
    });

    it("names in each function's environment exactly the secrets it may read", () => {
      const reads = secretReadsOf(template);
      for (const fn of Object.values(template.findResources("AWS::Lambda::Function"))) {
        const name = String(fn.Properties.FunctionName).replace(/^.*-threadwise-/, "");
        const variables = Object.keys(fn.Properties.Environment.Variables as object).filter((v) => v.endsWith("_SECRET_ARN"));
        expect(variables.sort(), name).toEqual(reads[name].map((secret) => CREDENTIAL_SECRETS[secret as CredentialSecretName].variable).sort());
      }
    });

    it("grants an imported secret's ARN, and creates only the others", () => {
      const imported = synthTemplate({ context: { ...prodContext, secretArns: JSON.stringify({ database: IMPORTED_DATABASE_SECRET }) } });
      expect(Object.values(imported.findResources("AWS::SecretsManager::Secret")).map((s) => s.Properties.Name)).not.toContain("prod/threadwise/database");
      expect(secretReadsOf(imported).slack).toEqual([IMPORTED_DATABASE_SECRET, "channelReplies", "slackSigning"].sort());
    });

    it("lets the readers of an imported secret decrypt with its customer-managed key, through Secrets Manager only", () => {
      const imported = synthTemplate({
        context: { ...prodContext, secretArns: { database: IMPORTED_DATABASE_SECRET }, secretsKmsKeyArn: IMPORTED_SECRETS_KEY },
      });
      for (const name of FUNCTIONS) {
        const decrypt = statementsOf(imported, logicalPrefix(name)).filter(
          (s) => actionsOf([s]).includes("kms:Decrypt") && s.Resource === IMPORTED_SECRETS_KEY,
        );
        expect(decrypt, name).toHaveLength(1);
        expect(decrypt[0].Resource, name).toBe(IMPORTED_SECRETS_KEY);
        expect(render((decrypt[0] as unknown as { Condition: { StringEquals: Record<string, unknown> } }).Condition.StringEquals["kms:ViaService"])).toBe(
          "secretsmanager.${AWS::Region}.amazonaws.com",
        );
      }
    });

    it("grants no decrypt on any key to the stack's own secrets (KMS only on the turn queues' key and the tenants' content keys)", () => {
      const queueKey = idOf(resourcesOf(template), "AWS::KMS::Key", "TurnQueuesKey");
      for (const name of FUNCTIONS) {
        const others = statementsOf(template, logicalPrefix(name)).filter((s) => !onKey(queueKey)(s) && !onContentKeys(s));
        expect(
          actionsOf(others).filter((a) => a.startsWith("kms:") && a !== "kms:CreateKey"),
          name,
        ).toEqual([]);
      }
    });
  });

  describe("MongoDB connections", () => {
    const reservedOf = (t: Template) =>
      Object.fromEntries(
        Object.values(t.findResources("AWS::Lambda::Function")).map((fn) => [
          String(fn.Properties.FunctionName).replace(/^.*-threadwise-/, ""),
          fn.Properties.ReservedConcurrentExecutions,
        ]),
      );
    const poolOf = (t: Template) => Object.fromEntries(Object.entries(environmentsOf(t)).map(([name, env]) => [name, Number(env.MONGODB_MAX_POOL_SIZE)]));

    it("reserves concurrency for every function from the stage's connection budget", () => {
      // Defaults: a budget of 500 and 3 members; a container holds its pool and a monitor per member.
      // The worker: what the queue feeds it and one container for its schedules (the recovery sweep runs in every stage).
      expect(reservedOf(template)).toEqual({ api: 38, worker: 11, slack: 10, teams: 10, setup: 1, stream: 10 });
    });

    it("keeps every container's connections together within the budget", () => {
      for (const budget of [300, 500, 1500]) {
        const t = synthTemplate({ context: { ...prodContext, mongodbConnectionBudget: budget } });
        const reserved = reservedOf(t);
        const pools = poolOf(t);
        const held = FUNCTIONS.reduce((sum, name) => sum + reserved[name] * (pools[name] + 3), 0);
        expect(held, String(budget)).toBeLessThanOrEqual(budget);
        expect(budget - held, String(budget)).toBeLessThan(pools.api + 3);
      }
    });

    it("reserves the streaming function the stage's streamConcurrency, out of the api's share", () => {
      const reserved = reservedOf(synthTemplate({ context: { ...prodContext, streamConcurrency: 20 } }));
      expect(reserved).toMatchObject({ stream: 20, api: 28 });
    });

    it("reserves the worker at least the concurrency the queue feeds it", () => {
      const t = synthTemplate({ context: { ...prodContext, workerMaxConcurrency: 25 } });
      expect(reservedOf(t).worker).toBe(26);
      t.hasResourceProperties("AWS::Lambda::EventSourceMapping", { ScalingConfig: { MaximumConcurrency: 25 } });
    });

    it("reserves the worker one container more than the queue feeds it for its schedules, with the approvals sweep too, out of the api's share", () => {
      const toolApprovals = { create_follow_up: { require: "always", approvers: { roles: ["lead"] } } };
      const t = synthTemplate({ context: { ...prodContext, toolApprovals } });
      // A sweep in a slot the queue's poller counts on would throttle the poller, and a throttled receive counts toward the DLQ.
      t.hasResourceProperties("AWS::Lambda::EventSourceMapping", { ScalingConfig: { MaximumConcurrency: 10 } });
      expect(reservedOf(t)).toMatchObject({ worker: 11, api: 38 });
      expect(t.toJSON().Outputs.ReservedConnections.Value).toBe("500");
    });

    it("throws at synth when the budget leaves the api no container", () => {
      expect(() => synthTemplate({ context: { ...prodContext, mongodbConnectionBudget: 100 } })).toThrow(
        expect.objectContaining({ details: [expect.objectContaining({ path: "mongodbConnectionBudget" })] }),
      );
    });

    it("sizes each function's pool and closes connections idle longer than the stage allows", () => {
      const envs = environmentsOf(synthTemplate({ context: { ...prodContext, mongodbMaxIdleSeconds: 30 } }));
      for (const name of FUNCTIONS) {
        expect(envs[name], name).toMatchObject({ MONGODB_MAX_POOL_SIZE: String(FUNCTION_POOL_SIZES[name]), MONGODB_MAX_IDLE_TIME_MS: "30000" });
      }
      expect(poolOf(template)).toMatchObject({ slack: 1, teams: 1 });
    });
  });

  describe("database set-up", () => {
    it("runs the setup function as a custom resource, again when the indexes' version or its code changes", () => {
      const [resource] = Object.values(template.findResources("Custom::ThreadwiseDatabaseSetup"));
      expect(resource.Properties.ServiceToken).toEqual({ "Fn::GetAtt": [expect.stringMatching(/^SetupFunction/), "Arn"] });
      expect(resource.Properties.Version).toBe(DATABASE_SETUP_VERSION);
      expect(resource.Properties.Code).toEqual({ s3Bucket: expect.anything(), s3Key: expect.stringMatching(/\.zip$/) });
    });

    it("has CloudFormation wait for the set-up's answer its function's timeout and a minute, not the default hour", () => {
      const [resource] = Object.values(template.findResources("Custom::ThreadwiseDatabaseSetup"));
      const [setupFn] = Object.values(template.findResources("AWS::Lambda::Function", { Properties: { FunctionName: "prod-threadwise-setup" } }));
      expect(Number(resource.Properties.ServiceTimeout)).toBe(setupFn.Properties.Timeout + 60);
    });

    it("updates the api and the worker only after the set-up", () => {
      const [setupId] = Object.keys(template.findResources("Custom::ThreadwiseDatabaseSetup"));
      for (const name of ["api", "worker"]) {
        const [fn] = Object.values(template.findResources("AWS::Lambda::Function", { Properties: { FunctionName: `prod-threadwise-${name}` } }));
        expect(fn.DependsOn, name).toContain(setupId);
      }
    });

    it("gives the setup function the time an index build may take, and no other grant than its secret, logs, traces and content keys", () => {
      template.hasResourceProperties("AWS::Lambda::Function", { FunctionName: "prod-threadwise-setup", Timeout: 600 });
      expect(environmentsOf(template).setup.MONGODB_SOCKET_TIMEOUT_MS).toBe("600000");
      expect(new Set(actionsOf(statementsOf(template, "Setup")).map((a) => a.split(":")[0]))).toEqual(new Set(["logs", "secretsmanager", "xray", "kms"]));
      // Its KMS grants are the content keys' alone (the contents it encrypts on set-up), never the queue's.
      expect(statementsOf(template, "Setup").filter((s) => actionsOf([s]).some((a) => a.startsWith("kms:")) && s.Resource === "*")).toEqual([
        expect.objectContaining({ Action: "kms:CreateKey" }),
      ]);
    });
  });

  describe("vpc", () => {
    const SERVICE = "com.amazonaws.vpce.eu-west-1.vpce-svc-0123456789abcdef0";
    const inVpc = synthTemplate({ context: { ...prodContext, vpc: "nat", atlasPrivateEndpointServiceName: SERVICE } });

    it("runs no function in a VPC unless asked", () => {
      template.resourceCountIs("AWS::EC2::VPC", 0);
      for (const fn of Object.values(template.findResources("AWS::Lambda::Function"))) expect(fn.Properties.VpcConfig).toBeUndefined();
    });

    it("runs every function in the private subnets with the functions' security group", () => {
      const [groupId] = Object.keys(
        inVpc.findResources("AWS::EC2::SecurityGroup", { Properties: { GroupDescription: Match.stringLikeRegexp("functions: no inbound") } }),
      );
      const privateSubnets = Object.keys(inVpc.findResources("AWS::EC2::Subnet", { Properties: { MapPublicIpOnLaunch: false } }));
      const ours = Object.values(inVpc.findResources("AWS::Lambda::Function")).filter((f) => String(f.Properties.FunctionName).startsWith("prod-threadwise-"));
      expect(ours).toHaveLength(FUNCTIONS.length);
      for (const fn of ours) {
        expect(fn.Properties.VpcConfig.SecurityGroupIds).toEqual([{ "Fn::GetAtt": [groupId, "GroupId"] }]);
        expect(fn.Properties.VpcConfig.SubnetIds.map((r: { Ref: string }) => r.Ref).sort()).toEqual(privateSubnets.sort());
      }
    });

    it("sends the functions' internet traffic through NAT gateways with Elastic IPs, and outputs them for Atlas's access list", () => {
      inVpc.resourceCountIs("AWS::EC2::NatGateway", 1);
      const eips = Object.keys(inVpc.findResources("AWS::EC2::EIP"));
      expect(eips).toHaveLength(1);
      expect(render(inVpc.toJSON().Outputs.NatPublicIps.Value)).toBe(eips.map((id) => `\${${id}}`).join(","));
    });

    it("adds an interface endpoint to Atlas's endpoint service that only the functions may reach", () => {
      inVpc.hasResourceProperties("AWS::EC2::VPCEndpoint", { ServiceName: SERVICE, VpcEndpointType: "Interface", PrivateDnsEnabled: false });
      inVpc.hasResourceProperties("AWS::EC2::SecurityGroupIngress", {
        FromPort: 1024,
        ToPort: 65535,
        IpProtocol: "tcp",
        SourceSecurityGroupId: Match.anyValue(),
      });
      const groups = Object.values(inVpc.findResources("AWS::EC2::SecurityGroup"));
      expect(groups.flatMap((g) => g.Properties.SecurityGroupIngress ?? [])).toEqual([]);
    });

    it("lets Lambda manage the functions' network interfaces", () => {
      const eni = statementsOf(inVpc, "Api").find((s) => actionsOf([s]).includes("ec2:CreateNetworkInterface"));
      expect(eni?.Resource).toBe("*");
      expect(actionsOf(statementsOf(template, "Api")).filter((a) => a.startsWith("ec2:"))).toEqual([]);
    });

    it("gives the function that restricts the VPC's default security group no AWS managed policy and a log group with the stage's retention", () => {
      for (const role of Object.values(inVpc.findResources("AWS::IAM::Role"))) expect(role.Properties.ManagedPolicyArns).toBeUndefined();
      const logGroups = inVpc.findResources("AWS::Logs::LogGroup");
      for (const fn of Object.values(inVpc.findResources("AWS::Lambda::Function"))) {
        const logGroup = logGroups[fn.Properties.LoggingConfig?.LogGroup?.Ref];
        expect(logGroup?.Properties.RetentionInDays, fn.Properties.Description).toBe(30);
      }
      const restrictor = Object.values(inVpc.findResources("AWS::Lambda::Function")).find((f) => f.Properties.Description?.includes("default security group"));
      const role = inVpc.toJSON().Resources[restrictor?.Properties.Role["Fn::GetAtt"][0]];
      const statements = role.Properties.Policies.flatMap((p: { PolicyDocument: { Statement: unknown[] } }) => p.PolicyDocument.Statement);
      expect(statements).toContainEqual({
        Effect: "Allow",
        Action: ["logs:CreateLogStream", "logs:PutLogEvents"],
        Resource: { "Fn::GetAtt": [restrictor?.Properties.LoggingConfig.LogGroup.Ref, "Arn"] },
      });
    });

    it("logs the VPC's traffic", () => {
      inVpc.hasResourceProperties("AWS::EC2::FlowLog", { TrafficType: "ALL", LogDestinationType: "cloud-watch-logs" });
    });
  });

  describe("tools", () => {
    const withTools = synthTemplate({ context: toolsContext });

    it("adds no Athena, Glue, S3 or knowledge base grant to any function without tool context", () => {
      for (const fn of ["Api", "Worker", "Slack", "Teams"]) {
        const actions = actionsOf(statementsOf(template, fn));
        expect(
          actions.filter((a) => TOOL_SERVICES.includes(a.split(":")[0]) || a === "bedrock:Retrieve"),
          fn,
        ).toEqual([]);
      }
    });

    it("turns off the local-only SQL and document tools on the api and the worker, and sets no other tool variable, without tool context", () => {
      const envs = environmentsOf(template);
      for (const name of ["api", "worker"]) {
        const tools = Object.fromEntries(Object.entries(envs[name]).filter(([k]) => TOOL_VARIABLES.test(k)));
        expect(tools, name).toEqual({ SQL_ENGINE: "none", DOCUMENTS_ENGINE: "none" });
      }
      for (const name of ["slack", "teams"]) {
        expect(
          Object.keys(envs[name]).filter((k) => TOOL_VARIABLES.test(k)),
          name,
        ).toEqual([]);
      }
    });

    it("keeps the sample SQL and document tools on the api and the worker when the stage asks for them", () => {
      const envs = environmentsOf(synthTemplate({ context: { sampleTools: "true" } }));
      for (const name of ["api", "worker"]) {
        expect(
          Object.keys(envs[name]).filter((k) => TOOL_VARIABLES.test(k)),
          name,
        ).toEqual([]);
      }
    });

    it("lets the api and the worker run, read and stop queries in the configured workgroup only", () => {
      for (const fn of ["Api", "Worker"]) {
        expect(grantsOf(withTools, fn, ["athena"])).toEqual(
          sortedGrants([
            {
              actions: ["athena:StartQueryExecution", "athena:GetQueryExecution", "athena:GetQueryResults", "athena:StopQueryExecution"],
              resources: [`${ARN}:athena:${HERE}:workgroup/analytics`],
            },
          ]),
        );
      }
    });

    it("lets the api and the worker read the Glue catalog, the database and its tables only", () => {
      for (const fn of ["Api", "Worker"]) {
        expect(grantsOf(withTools, fn, ["glue"])).toEqual(
          sortedGrants([
            {
              actions: ["glue:GetDatabase", "glue:GetTable", "glue:GetTables", "glue:GetPartitions"],
              resources: [`${ARN}:glue:${HERE}:catalog`, `${ARN}:glue:${HERE}:database/sales`, `${ARN}:glue:${HERE}:table/sales/*`],
            },
          ]),
        );
      }
    });

    it("lets the api and the worker read the data buckets and read and write under the results prefix only", () => {
      for (const fn of ["Api", "Worker"]) {
        expect(grantsOf(withTools, fn, ["s3"])).toEqual(
          sortedGrants([
            { actions: ["s3:GetBucketLocation", "s3:ListBucket"], resources: ["arn:aws:s3:::tw-lake", "arn:aws:s3:::tw-lake-archive"] },
            { actions: ["s3:GetObject"], resources: ["arn:aws:s3:::tw-lake/*", "arn:aws:s3:::tw-lake-archive/*"] },
            { actions: ["s3:GetBucketLocation", "s3:ListBucket", "s3:ListBucketMultipartUploads"], resources: [`${ARN}:s3:::tw-results`] },
            {
              actions: ["s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"],
              resources: [`${ARN}:s3:::tw-results/athena/threadwise/*`],
            },
          ]),
        );
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

    it("gives the worker and the webhooks (which decide approvals) the roles of Slack and Teams users, as they read them back", () => {
      const slack = { T0123: { default: ["viewer"], users: { U0ALICE: ["analyst"] } } };
      const envs = environmentsOf(synthTemplate({ context: { slackRoles: slack, teamsRoles: '{"contoso":{"default":["analyst"]}}' } }));
      for (const name of ["worker", "slack", "teams"]) {
        expect(loadConfig({ ...envs[name], MONGODB_URI: "mongodb://db" }).auth.channelRoles, name).toEqual({
          slack,
          teams: { contoso: { default: ["analyst"] } },
        });
      }
      for (const name of ["api", "setup"]) {
        expect(
          Object.keys(envs[name]).filter((k) => /^(SLACK|TEAMS)_ROLES$/.test(k)),
          name,
        ).toEqual([]);
      }
    });

    it("gives the api and the worker TOOL_APPROVALS, as they read it back", () => {
      const toolApprovals = { create_follow_up: { require: "always", approvers: { roles: ["lead"] } } };
      const envs = environmentsOf(synthTemplate({ context: { toolApprovals } }));
      for (const name of ["api", "worker"]) {
        expect(loadConfig({ ...envs[name], MONGODB_URI: "mongodb://db" }).tools.approvals.tools, name).toEqual(toolApprovals);
      }
      expect(envs.slack.TOOL_APPROVALS).toBeUndefined();
    });

    it("gives the webhook functions no tool grant or variable", () => {
      const envs = environmentsOf(withTools);
      for (const fn of ["Slack", "Teams"]) {
        const actions = actionsOf(statementsOf(withTools, fn));
        expect(
          actions.filter((a) => TOOL_SERVICES.includes(a.split(":")[0]) || a === "bedrock:Retrieve"),
          fn,
        ).toEqual([]);
        expect(
          Object.keys(envs[fn.toLowerCase()]).filter((k) => TOOL_VARIABLES.test(k)),
          fn,
        ).toEqual([]);
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

  describe("streaming URL", () => {
    const urls = () => Object.values(template.findResources("AWS::Lambda::Url"));
    const streamFn = () =>
      Object.entries(template.findResources("AWS::Lambda::Function")).find(([, f]) => f.Properties.FunctionName === "prod-threadwise-stream")!;

    it("serves the stream function's live alias through a public Function URL that streams", () => {
      expect(urls()).toHaveLength(1);
      const [url] = urls();
      expect(url.Properties).toMatchObject({ AuthType: "NONE", InvokeMode: "RESPONSE_STREAM", Qualifier: "live" });
      expect(JSON.stringify(url.Properties.TargetFunctionArn)).toContain(streamFn()[0]);
      // No CORS: the HTTP API has none either.
      expect(url.Properties.Cors).toBeUndefined();
    });

    it("lets anyone invoke the live alias through its URL only: InvokeFunctionUrl for NONE auth, InvokeFunction only via the URL", () => {
      const [aliasId] = Object.keys(template.findResources("AWS::Lambda::Alias")).filter((id) => id.startsWith("StreamFunctionLive"));
      const permissions = Object.values(template.findResources("AWS::Lambda::Permission"))
        .map((p) => p.Properties)
        .filter((p) => p.FunctionName?.Ref === aliasId);
      expect(permissions).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ Action: "lambda:InvokeFunctionUrl", Principal: "*", FunctionUrlAuthType: "NONE" }),
          expect.objectContaining({ Action: "lambda:InvokeFunction", Principal: "*", InvokedViaFunctionUrl: true }),
        ]),
      );
      expect(permissions).toHaveLength(2);
    });

    it("gives the stream function 15 minutes, the longest a Function URL streams, and the api's grants for running turns", () => {
      const [id, fn] = streamFn();
      expect(fn.Properties.Timeout).toBe(900);
      expect(actionsOf(statementsOf(template, id.replace(/Function.*$/, "")))).toEqual(
        expect.arrayContaining(["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream", "sqs:SendMessage"]),
      );
    });

    it("verifies tokens against the issuer and audiences the HTTP API's JWT authorizer uses", () => {
      const authorizer = Object.values(template.findResources("AWS::ApiGatewayV2::Authorizer"))[0].Properties.JwtConfiguration;
      const env = environmentsOf(template).stream;
      expect(env.JWT_ISSUER).toBe(authorizer.Issuer);
      expect(env.JWT_AUDIENCE.split(",")).toEqual(authorizer.Audience);
    });

    it("names the URL to the api function (its 406 to an event stream) and in the StreamingUrl output", () => {
      const [urlId] = Object.keys(template.findResources("AWS::Lambda::Url"));
      const api = Object.values(template.findResources("AWS::Lambda::Function")).find((f) => f.Properties.FunctionName === "prod-threadwise-api")!;
      expect(api.Properties.Environment.Variables.STREAMING_URL).toEqual({ "Fn::GetAtt": [urlId, "FunctionUrl"] });
      expect(template.toJSON().Outputs.StreamingUrl.Value).toEqual({ "Fn::GetAtt": [urlId, "FunctionUrl"] });
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

    it("leaves /healthz, /readyz, /openapi.json, the MCP sign-in callback and the webhooks to the functions", () => {
      const open = ["GET /healthz", "GET /readyz", "GET /openapi.json", "GET /v1/mcp/oauth/callback", "POST /slack/events", "POST /slack/interactivity"];
      for (const key of [...open, "POST /teams/messages"]) {
        template.hasResourceProperties("AWS::ApiGatewayV2::Route", { RouteKey: key, AuthorizationType: "NONE" });
      }
      template.resourceCountIs("AWS::ApiGatewayV2::Route", AUTHORIZED_ROUTES.length + 7);
    });

    it("routes to the api function every route its router serves, and no other", () => {
      // Enumerating the routes builds no connection: a MongoClient connects on its first operation.
      const database = new ThreadwiseDatabase(new MongoClient("mongodb://127.0.0.1:1/"), { dbName: "routes" });
      const deps = {
        authenticate: async () => ({ principal: apiPrincipal("u"), roles: [] }),
        database,
        runner: {} as never,
        idempotentRequests: {} as never,
        events: {} as never,
        maxMessageChars: 1,
        approvals: {} as never,
      };
      const admin = adminRoutes({ authenticate: deps.authenticate, limits: {} as never, roles: { tenantAdminRole: "threadwise:admin" } });
      const adminMcp = adminMcpRoutes({ authenticate: deps.authenticate, store: {} as never, defaults: [], roles: { tenantAdminRole: "threadwise:admin" } });
      const oauth = new McpOAuth({ db: database.db, keys: {} as never, redirectUrl: "https://api.invalid/v1/mcp/oauth/callback", retentionMs: 1 });
      const lifecycle = lifecycleRoutes({
        authenticate: deps.authenticate,
        database,
        eraser: {} as never,
        audit: {} as never,
        tenantAdminRole: "threadwise:admin",
      });
      const members = memberRoutes({
        authenticate: deps.authenticate,
        conversations: database.conversations,
        roles: { tenantAdminRole: "threadwise:admin" },
        audit: {} as never,
      });
      const contentKeys = contentKeyRoutes({ authenticate: deps.authenticate, keyRotation: {} as never, roles: { tenantAdminRole: "threadwise:admin" } });
      const routes = [
        ...[...apiRoutes(deps), ...agentProtocolRoutes(deps), ...admin, ...adminMcp, ...lifecycle, ...members, ...contentKeys],
        ...[...mcpRoutes(deps), ...mcpOAuthRoutes(oauth)],
      ];
      expect(unmatched(routes, routeKeysByFunction(template).api)).toEqual({ notInApi: [], notInRouter: [] });
    });

    it("routes to each webhook function the route its channel serves", () => {
      const deduper = new ChannelEventDeduper(new MongoClient("mongodb://127.0.0.1:1/").db("routes"));
      const keys = routeKeysByFunction(template);
      const slack = channelRoutes(channelHandlers({ slack: { signingSecret: "s" }, deduper, enqueue: async () => undefined, approvals: {} as never }));
      const teams = channelRoutes(channelHandlers({ teams: { appId: "a" }, deduper, enqueue: async () => undefined }));
      expect(unmatched(slack, keys.slack)).toEqual({ notInApi: [], notInRouter: [] });
      expect(unmatched(teams, keys.teams)).toEqual({ notInApi: [], notInRouter: [] });
    });

    it("writes JSON access logs with the request id", () => {
      template.hasResourceProperties("AWS::ApiGatewayV2::Stage", {
        StageName: "$default",
        AccessLogSettings: { DestinationArn: Match.anyValue(), Format: Match.stringLikeRegexp('"requestId":"\\$context.requestId"') },
      });
    });
  });

  describe("mcpOAuth", () => {
    const withOAuth = resourcesOf(synthTemplate({ context: { ...prodContext, mcpOAuth: "true" } }));
    const keyId = idOf(withOAuth, "AWS::KMS::Key", "McpOAuthKey");
    const callers = ["Api", "Worker", "Stream"];
    const others = ["Slack", "Teams", "Setup"];

    it("creates one KMS key for users' MCP tokens, rotated, and retained with a retained stage's data", () => {
      expect(Object.keys(withOAuth).filter((id) => withOAuth[id].Type === "AWS::KMS::Key" && id.startsWith("McpOAuthKey"))).toHaveLength(1);
      expect(withOAuth[keyId].Properties).toMatchObject({ EnableKeyRotation: true });
      expect(withOAuth[keyId].DeletionPolicy).toBe("Retain");
    });

    it("grants GenerateDataKey and Decrypt on that key alone to the api, worker and stream functions, and nothing of KMS to the others", () => {
      for (const name of callers) {
        expect(statementsFor(withOAuth, name, "kms").filter(onKey(keyId))).toEqual([
          { Effect: "Allow", Action: [...MCP_OAUTH_KMS_ACTIONS].sort(), Resource: { "Fn::GetAtt": [keyId, "Arn"] } },
        ]);
      }
      for (const name of others) expect(statementsFor(withOAuth, name, "kms").filter(onKey(keyId))).toEqual([]);
    });

    it("sets the key's ARN and the API's own callback URL on the functions it grants, and on no other", () => {
      const apiId = idOf(withOAuth, "AWS::ApiGatewayV2::Api", "ApiHttpApi");
      for (const name of callers) {
        expect(variablesFor(withOAuth, name)).toMatchObject({
          [FUNCTION_ENV.mcpOAuthKmsKeyId]: { "Fn::GetAtt": [keyId, "Arn"] },
          [FUNCTION_ENV.mcpOAuthRedirectUrl]: { "Fn::Join": ["", [{ "Fn::GetAtt": [apiId, "ApiEndpoint"] }, MCP_OAUTH_CALLBACK_PATH]] },
        });
      }
      for (const name of others) expect(Object.keys(variablesFor(withOAuth, name)).filter((v) => v.startsWith("MCP_OAUTH_"))).toEqual([]);
    });

    it("returns a template without a dependency cycle, though the functions name the API that integrates them", () => {
      expect(cycleIn(withOAuth)).toBeUndefined();
      // The check sees a cycle where there is one: the API made to depend on a function it integrates.
      const apiId = idOf(withOAuth, "AWS::ApiGatewayV2::Api", "ApiHttpApi");
      const cyclic = { ...withOAuth, [apiId]: { ...withOAuth[apiId], DependsOn: [idOf(withOAuth, "AWS::Lambda::Function", "ApiFunction")] } };
      expect(cycleIn(cyclic)).toEqual(expect.arrayContaining([apiId]));
    });

    it("creates no key, grant or variable without mcpOAuth", () => {
      const without = resourcesOf(template);
      expect(Object.keys(without).filter((id) => without[id].Type === "AWS::KMS::Key")).toEqual([idOf(without, "AWS::KMS::Key", "TurnQueuesKey")]);
      for (const name of [...callers, ...others]) {
        expect(statementsFor(without, name, "kms").filter((s) => JSON.stringify(s).includes("McpOAuth"))).toEqual([]);
        expect(Object.keys(variablesFor(without, name)).filter((v) => v.startsWith("MCP_OAUTH_"))).toEqual([]);
      }
    });
  });

  describe("contents at rest", () => {
    const resources = resourcesOf(template);
    const sealing = ["Api", "Stream", "Worker", "Setup"];
    const contentStatements = (r: typeof resources, name: string) =>
      statementsFor(r, name, "kms").filter((s) => s.Resource === "*" || onContentKeys(s)) as { Action: unknown; Resource: unknown; Condition?: unknown }[];

    it("tells the api, stream, worker and setup functions to seal contents with KMS keys tagged with the stage, and the webhooks nothing of it", () => {
      const environments = environmentsOf(template);
      for (const name of ["api", "stream", "worker", "setup"]) {
        expect(environments[name], name).toMatchObject({
          [FUNCTION_ENV.contentEncryption]: "on",
          [FUNCTION_ENV.contentKeys]: "kms",
          [FUNCTION_ENV.contentKeyDeployment]: "prod",
          [FUNCTION_ENV.contentKeyDeletionDays]: "7",
          [FUNCTION_ENV.contentKeyRotationDays]: "365",
        });
        // What the function reads of them is what the stack meant.
        expect(loadConfig({ ...environments[name], JWT_ISSUER: ISSUER }).encryption).toEqual({
          enabled: true,
          keys: "kms",
          keyDeployment: "prod",
          keyDeletionDays: 7,
          keyRotationDays: 365,
          dataKeyMaxAgeSeconds: 300,
        });
      }
      for (const name of ["slack", "teams"])
        expect(
          Object.keys(environments[name]).filter((v) => v.startsWith("CONTENT_")),
          name,
        ).toEqual([]);
    });

    it("lets them create only symmetric encryption keys whose request tags name a tenant and this stage, on * (CreateKey has no narrower resource)", () => {
      for (const name of sealing) {
        expect(
          contentStatements(resources, name).filter((s) => s.Action === "kms:CreateKey"),
          name,
        ).toEqual([
          {
            Effect: "Allow",
            Action: "kms:CreateKey",
            Resource: "*",
            Condition: {
              StringEquals: { "aws:RequestTag/threadwise:deployment": "prod", "kms:KeySpec": "SYMMETRIC_DEFAULT", "kms:KeyUsage": "ENCRYPT_DECRYPT" },
              Null: { "aws:RequestTag/threadwise:tenant": "false" },
              "ForAllValues:StringEquals": { "aws:TagKeys": ["threadwise:tenant", "threadwise:deployment"] },
            },
          },
        ]);
      }
    });

    it("lets them tag only a key that names no deployment yet (one being made), with a tenant and this stage and no other tag", () => {
      for (const name of sealing) {
        const [tag] = contentStatements(resources, name).filter((s) => s.Action === "kms:TagResource");
        expect(tag.Condition, name).toEqual({
          StringEquals: { "aws:RequestTag/threadwise:deployment": "prod" },
          Null: { "aws:RequestTag/threadwise:tenant": "false", "aws:ResourceTag/threadwise:deployment": "true" },
          "ForAllValues:StringEquals": { "aws:TagKeys": ["threadwise:tenant", "threadwise:deployment"] },
        });
      }
    });

    it("lets them use only keys of the account and region tagged with a tenant and this stage, and only the api (which erases tenants) delete them", () => {
      for (const name of sealing) {
        const use = contentStatements(resources, name).filter((s) => [s.Action].flat().includes("kms:Decrypt"));
        expect(use, name).toHaveLength(1);
        expect([use[0].Action].flat().sort(), name).toEqual(
          name === "Api" ? ["kms:Decrypt", "kms:GenerateDataKey", "kms:ScheduleKeyDeletion"] : ["kms:Decrypt", "kms:GenerateDataKey"],
        );
        expect(render(use[0].Resource)).toBe(CONTENT_KEYS_RESOURCE);
        expect(use[0].Condition).toEqual({
          StringEquals: { "aws:ResourceTag/threadwise:deployment": "prod" },
          Null: { "aws:ResourceTag/threadwise:tenant": "false" },
        });
      }
    });

    it("gives the webhooks no content-key permission: no key made, tagged, used or deleted but the turn queues' own", () => {
      const queueKey = idOf(resources, "AWS::KMS::Key", "TurnQueuesKey");
      for (const name of ["Slack", "Teams"]) {
        const kms = statementsFor(resources, name, "kms");
        expect(kms.length, name).toBeGreaterThan(0);
        expect(
          kms.filter((s) => !onKey(queueKey)(s)),
          name,
        ).toEqual([]);
      }
    });

    it("tags the keys with the stage they belong to, so another stage's policy refuses them", () => {
      const staging = resourcesOf(synthTemplate({ context: { ...prodContext, stage: "staging", retainData: "false", alarmEmails: "" } }));
      const [use] = contentStatements(staging, "Api").filter((s) => [s.Action].flat().includes("kms:Decrypt"));
      expect(use.Condition).toMatchObject({ StringEquals: { "aws:ResourceTag/threadwise:deployment": "staging" } });
      expect(variablesFor(staging, "Api")[FUNCTION_ENV.contentKeyDeployment]).toBe("staging");
    });

    it("passes the stage's deletion window to the functions", () => {
      const longer = synthTemplate({ context: { ...prodContext, contentKeyDeletionDays: "30" } });
      expect(environmentsOf(longer).api[FUNCTION_ENV.contentKeyDeletionDays]).toBe("30");
    });

    it("with contentEncryption=off, tells the four functions so and grants no content key to any function", () => {
      const off = resourcesOf(synthTemplate({ context: { ...prodContext, contentEncryption: "off" } }));
      for (const name of sealing) {
        expect(variablesFor(off, name)[FUNCTION_ENV.contentEncryption], name).toBe("off");
        expect(variablesFor(off, name)[FUNCTION_ENV.contentKeys], name).toBeUndefined();
      }
      for (const name of [...sealing, "Slack", "Teams"]) expect(contentStatements(off, name), name).toEqual([]);
    });
  });

  describe("queue", () => {
    it("is FIFO with explicit deduplication ids, encrypted with its own customer managed key, and a dead-letter queue", () => {
      const key = { "Fn::GetAtt": [idOf(resourcesOf(template), "AWS::KMS::Key", "TurnQueuesKey"), "Arn"] };
      template.hasResourceProperties("AWS::SQS::Queue", {
        QueueName: "prod-threadwise-turns.fifo",
        FifoQueue: true,
        ContentBasedDeduplication: false,
        KmsMasterKeyId: key,
        VisibilityTimeout: 360,
        RedrivePolicy: { deadLetterTargetArn: Match.anyValue(), maxReceiveCount: 3 },
      });
      template.hasResourceProperties("AWS::SQS::Queue", {
        QueueName: "prod-threadwise-turns-dlq.fifo",
        FifoQueue: true,
        KmsMasterKeyId: key,
      });
      for (const queue of Object.values(template.findResources("AWS::SQS::Queue"))) expect(queue.Properties.SqsManagedSseEnabled).toBeUndefined();
    });

    it("rotates the queues' key yearly and keeps it with a retained stage's queues", () => {
      const resources = resourcesOf(template);
      const key = resources[idOf(resources, "AWS::KMS::Key", "TurnQueuesKey")] as unknown as {
        Properties: { EnableKeyRotation: boolean };
        DeletionPolicy?: string;
      };
      expect(key.Properties.EnableKeyRotation).toBe(true);
      expect(key.DeletionPolicy).toBe("Retain");
    });

    it("grants the queues' key through the queue grants alone: to the functions that send or receive turns, not to the setup function", () => {
      const resources = resourcesOf(template);
      const queueKey = idOf(resources, "AWS::KMS::Key", "TurnQueuesKey");
      for (const name of ["Api", "Stream", "Worker", "Slack", "Teams"]) {
        expect(actionsOf(statementsFor(resources, name, "kms").filter(onKey(queueKey)) as { Action: string | string[] }[]), name).toEqual(
          expect.arrayContaining(["kms:Decrypt", "kms:GenerateDataKey*"]),
        );
      }
      expect(statementsFor(resources, "Setup", "kms").filter(onKey(queueKey))).toEqual([]);
    });

    it("refuses requests without TLS", () => {
      template.hasResourceProperties("AWS::SQS::QueuePolicy", {
        PolicyDocument: {
          Statement: Match.arrayWith([Match.objectLike({ Effect: "Deny", Condition: { Bool: { "aws:SecureTransport": "false" } } })]),
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

    it("alarms on errors and throttles of every function that serves traffic", () => {
      for (const metric of ["Errors", "Throttles"]) {
        const alarms = Object.values(template.findResources("AWS::CloudWatch::Alarm", { Properties: { MetricName: metric, Namespace: "AWS/Lambda" } }));
        // api, worker, slack, teams, stream: every function but the deploy step's setup (and the streams refused, the stream's throttles paged).
        const stageAlarms = alarms.filter((a) => !a.Properties.AlarmDescription.startsWith("[rollback]") && !a.Properties.AlarmName.endsWith("StreamsRefused"));
        expect(stageAlarms).toHaveLength(5);
      }
    });

    it("alarms on API 5xx responses", () => {
      template.hasResourceProperties("AWS::CloudWatch::Alarm", { MetricName: "5xx", Namespace: "AWS/ApiGateway" });
    });

    it("shows every per-turn metric on the stage's dashboard", () => {
      const [dashboard] = Object.values(template.findResources("AWS::CloudWatch::Dashboard"));
      expect(dashboard.Properties.DashboardName).toBe("prod-threadwise-us-east-1");
      const body = JSON.stringify(dashboard.Properties.DashboardBody);
      for (const metric of Object.values(TURN_METRICS)) expect(body).toContain(`\\"${METRICS_NAMESPACE}\\",\\"${metric}\\"`);
    });

    it("notifies the alarm topic when one is configured, on ALARM and OK, and creates none", () => {
      const topic = "arn:aws:sns:eu-west-1:123456789012:ops";
      const withTopic = synthTemplate({ context: { ...prodContext, alarmEmails: undefined, alarmTopicArn: topic } });
      const alarms = Object.values(withTopic.findResources("AWS::CloudWatch::Alarm")).filter((a) => !a.Properties.AlarmDescription.startsWith("[rollback]"));
      expect(alarms.length).toBeGreaterThan(20);
      for (const a of alarms) expect([a.Properties.AlarmActions, a.Properties.OKActions]).toEqual([[topic], [topic]]);
      withTopic.resourceCountIs("AWS::SNS::Topic", 0);
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
