import { readFileSync } from "node:fs";
import { App, Duration, Token } from "aws-cdk-lib";
import type { Template } from "aws-cdk-lib/assertions";
import {
  BEDROCK_SERVER_ERRORS_ALARM_THRESHOLD,
  BEDROCK_THROTTLES_ALARM_PERIODS,
  BEDROCK_THROTTLES_ALARM_THRESHOLD,
  FAILED_TURN_RATE_ALARM_PERCENT,
  FAILED_TURN_RATE_MIN_FAILURES,
  RATE_ALARM_DATAPOINTS,
  RATE_ALARM_PERIODS,
  STREAMS_REFUSED_ALARM_THRESHOLD,
  DEFAULT_OLDEST_TURN_ALARM,
  RUNBOOK,
  WEBHOOK_4XX_ALARM_THRESHOLD,
  WEBHOOK_5XX_ALARM_THRESHOLD,
} from "../../infra/constructs/operations.js";
import { LIVE_ALIAS } from "../../infra/constructs/threadwise-function.js";
import { visibilityTimeoutFor } from "../../infra/constructs/turn-queues.js";
import { readStageConfig, STAGE_ENVIRONMENTS } from "../../infra/stage-config.js";
import { ValidationError } from "../../lib/errors.js";
import { isApprovalSweepEvent } from "../../lib/approvals/index.js";
import { APPROVAL_SWEEP_METRIC_NAMES, TURN_FAILURE_REASONS } from "../../lib/observability/index.js";
import { APPROVAL_SWEEP_INTERVAL, KEY_MAINTENANCE_INTERVAL, TURN_RECOVERY_INTERVAL } from "../../infra/threadwise-stack.js";
import { isKeyMaintenanceEvent } from "../../lib/lifecycle/key-maintenance-event.js";
import { isTurnRecoveryEvent } from "../../lib/agent/turn-recovery-event.js";
import { buildStack, synthTemplate } from "./synth.js";

const prodContext = { stage: "prod", jwtIssuer: "https://login.example.com/tenant/v2.0", alarmEmails: "oncall@example.com" };
const SERVING = ["api", "worker", "slack", "teams", "stream"] as const;
const capital = (name: string) => `${name[0].toUpperCase()}${name.slice(1)}`;

type Resource = { Properties: Record<string, any>; DeletionPolicy?: string };

/** The alarm named `<stage>-threadwise-<id>`. */
function alarm(template: Template, stage: string, id: string): Resource {
  const found = Object.values(template.findResources("AWS::CloudWatch::Alarm", { Properties: { AlarmName: `${stage}-threadwise-${id}` } }));
  if (found.length !== 1) throw new Error(`no alarm ${id}`);
  return found[0] as Resource;
}

/** Slugs of the headings of a Markdown file, as GitHub makes anchors of them. */
function anchorsOf(path: string): Set<string> {
  const headings = readFileSync(new URL(`../../${path}`, import.meta.url), "utf8").match(/^#+ .+$/gm) ?? [];
  return new Set(
    headings.map((h) =>
      h
        .replace(/^#+ /, "")
        .toLowerCase()
        .replace(/[^a-z0-9 -]/g, "")
        .replace(/ /g, "-"),
    ),
  );
}

/** The logical id a `{ Ref }` or `{ Fn::GetAtt }` points at. */
const target = (value: unknown): string => JSON.stringify(value).match(/"(?:Ref|Fn::GetAtt)":\[?"([^"]+)"/)?.[1] ?? JSON.stringify(value);

describe("ThreadwiseStack operations", () => {
  const prod = synthTemplate({ context: prodContext });
  const dev = synthTemplate();

  describe("alarms", () => {
    it("pages on the share of finished turns that failed, over two of three periods, not on one failure", () => {
      const { Properties: p } = alarm(prod, "prod", "FailedTurnRate");
      expect(p).toMatchObject({
        Threshold: FAILED_TURN_RATE_ALARM_PERCENT,
        EvaluationPeriods: RATE_ALARM_PERIODS,
        DatapointsToAlarm: RATE_ALARM_DATAPOINTS,
        ComparisonOperator: "GreaterThanOrEqualToThreshold",
        AlarmDescription: expect.stringMatching(/^\[page\] prod: /),
      });
      const expression = p.Metrics.find((m: { Expression?: string }) => m.Expression).Expression as string;
      expect(expression).toBe(`IF(failed >= ${FAILED_TURN_RATE_MIN_FAILURES}, 100 * failed / (failed + completed), 0)`);
      const byId = Object.fromEntries(p.Metrics.filter((m: { MetricStat?: unknown }) => m.MetricStat).map((m: any) => [m.Id, m.MetricStat]));
      expect(byId.failed).toMatchObject({ Metric: { MetricName: "TurnsFailed", Dimensions: [{ Name: "service", Value: "threadwise-prod" }] }, Stat: "Sum" });
      expect(byId.completed).toMatchObject({ Metric: { MetricName: "TurnDurationMs" }, Stat: "SampleCount" });
    });

    it("pages on Bedrock throttling sustained over three periods, and on streams refused", () => {
      expect(alarm(prod, "prod", "BedrockThrottles").Properties).toMatchObject({
        EvaluationPeriods: BEDROCK_THROTTLES_ALARM_PERIODS,
        DatapointsToAlarm: BEDROCK_THROTTLES_ALARM_PERIODS,
        AlarmDescription: expect.stringMatching(/^\[page\] /),
      });
      const { Properties: refused } = alarm(prod, "prod", "StreamsRefused");
      expect(refused).toMatchObject({ Namespace: "AWS/Lambda", MetricName: "Throttles", Threshold: STREAMS_REFUSED_ALARM_THRESHOLD });
      expect(target(refused.Dimensions[0].Value)).toMatch(/^StreamFunction/);
    });

    it("alarms on the age of the oldest queued turn", () => {
      const { Properties: p } = alarm(prod, "prod", "OldestQueuedTurn");
      expect(p).toMatchObject({
        Namespace: "AWS/SQS",
        MetricName: "ApproximateAgeOfOldestMessage",
        Statistic: "Maximum",
        Threshold: DEFAULT_OLDEST_TURN_ALARM.toSeconds(),
      });
      expect(target(p.Dimensions[0].Value)).toMatch(/^TurnQueuesTurns/);
    });

    it("alarms on Bedrock throttles and server errors of the stage's model", () => {
      const modelId = { Name: "ModelId", Value: "us.anthropic.claude-sonnet-4-20250514-v1:0" };
      expect(alarm(prod, "prod", "BedrockThrottles").Properties).toMatchObject({
        Namespace: "AWS/Bedrock",
        MetricName: "InvocationThrottles",
        Dimensions: [modelId],
        Threshold: BEDROCK_THROTTLES_ALARM_THRESHOLD,
      });
      expect(alarm(prod, "prod", "BedrockErrors").Properties).toMatchObject({
        Namespace: "AWS/Bedrock",
        MetricName: "InvocationServerErrors",
        Dimensions: [modelId],
        Threshold: BEDROCK_SERVER_ERRORS_ALARM_THRESHOLD,
      });
    });

    it("alarms when a worker invocation takes 80 % of the worker's timeout", () => {
      const template = synthTemplate({ context: { ...prodContext, workerTimeoutSeconds: 600 } });
      const { Properties: p } = alarm(template, "prod", "WorkerNearTimeout");
      expect(p).toMatchObject({ Namespace: "AWS/Lambda", MetricName: "Duration", Statistic: "Maximum", Threshold: 480_000 });
      expect(target(p.Dimensions[0].Value)).toMatch(/^WorkerFunction/);
    });

    it("alarms on spikes of 4xx and 5xx answers of each webhook", () => {
      for (const [channel, title] of [
        ["slack", "Slack"],
        ["teams", "Teams"],
      ]) {
        expect(alarm(prod, "prod", `${title}Webhook4xx`).Properties).toMatchObject({
          Namespace: "Threadwise",
          MetricName: "WebhookClientErrors",
          Dimensions: expect.arrayContaining([
            { Name: "channel", Value: channel },
            { Name: "service", Value: "threadwise-prod" },
          ]),
          Threshold: WEBHOOK_4XX_ALARM_THRESHOLD,
        });
        expect(alarm(prod, "prod", `${title}Webhook5xx`).Properties).toMatchObject({
          MetricName: "WebhookServerErrors",
          Threshold: WEBHOOK_5XX_ALARM_THRESHOLD,
        });
      }
    });

    it("alarms on these and no others: what users feel, each function's errors and throttles, dead letters, API 5xx, each version's figures", () => {
      const names = Object.values(prod.findResources("AWS::CloudWatch::Alarm")).map((a) => String(a.Properties.AlarmName).replace("prod-threadwise-", ""));
      expect(names.sort()).toEqual(
        [
          ...SERVING.flatMap((f) => [`${f}Errors`, `${f}Throttles`, `${capital(f)}VersionErrors`]),
          ...["Api", "Worker", "Stream"].map((f) => `${f}VersionTurnsFailed`),
          ...["Api", "Slack", "Teams"].map((f) => `${f}VersionServerErrors`),
          "WorkerVersionNearTimeout",
          "FailedTurnRate",
          "StreamsRefused",
          "OldestQueuedTurn",
          "DeadLetters",
          "BedrockThrottles",
          "BedrockErrors",
          "WorkerNearTimeout",
          "Api5xx",
          "SlackWebhook4xx",
          "SlackWebhook5xx",
          "TeamsWebhook4xx",
          "TeamsWebhook5xx",
          // infra/constructs/budget-alarms.ts (docs/limits.md).
          "TenantBudget80",
          "TenantBudget100",
        ].sort(),
      );
    });

    it("names in every alarm's description a runbook line that exists", () => {
      const alarms = Object.values(prod.findResources("AWS::CloudWatch::Alarm"));
      for (const a of alarms) {
        // The runbook is docs/operations.md's, or for the budget alarms docs/limits.md's.
        const [, page = RUNBOOK, anchor] = /Runbook: (docs\/(?:operations|limits)\.md)#([a-z0-9-]+)$/.exec(a.Properties.AlarmDescription) ?? [];
        expect(anchorsOf(page).has(anchor), `${a.Properties.AlarmName}: ${a.Properties.AlarmDescription}`).toBe(true);
      }
    });

    it("shows every alarm, the turn outcomes by reason, Bedrock and the webhooks on the dashboard", () => {
      const body = JSON.stringify(Object.values(prod.findResources("AWS::CloudWatch::Dashboard"))[0].Properties.DashboardBody);
      for (const reason of TURN_FAILURE_REASONS) expect(body).toContain(`\\"reason\\",\\"${reason}\\"`);
      for (const metric of [
        "TurnsQueued",
        "TurnsRetried",
        "TurnsGivenUp",
        "TurnsFailed",
        "InvocationThrottles",
        "WebhookClientErrors",
        "WebhookServerErrors",
      ]) {
        expect(body).toContain(`\\"${metric}\\"`);
      }
      expect(body).toContain("alarm");
      const alarmLogicalIds = Object.keys(prod.findResources("AWS::CloudWatch::Alarm"));
      for (const id of alarmLogicalIds) expect(body, id).toContain(`"${id}"`);
    });
  });

  describe("alarm topic", () => {
    const withAll = synthTemplate({
      context: {
        ...prodContext,
        alarmEmails: "oncall@example.com, lead@example.com",
        alarmUrls: "https://events.pagerduty.com/integration/abc123/enqueue",
        alarmSlackChannel: "T0123ABCD/C0456EFGH",
      },
    });

    it("creates the stage's alarm topic, TLS only, with the subscriptions context names", () => {
      const topics = Object.entries(withAll.findResources("AWS::SNS::Topic"));
      expect(topics).toHaveLength(1);
      const [topicId, topic] = topics[0];
      expect(topic.Properties.TopicName).toBe("prod-threadwise-alarms");
      const subscriptions = Object.values(withAll.findResources("AWS::SNS::Subscription")).map((r) => r.Properties);
      expect(subscriptions.map((p) => [p.Protocol, p.Endpoint]).sort()).toEqual([
        ["email", "lead@example.com"],
        ["email", "oncall@example.com"],
        ["https", "https://events.pagerduty.com/integration/abc123/enqueue"],
      ]);
      for (const p of subscriptions) expect(target(p.TopicArn)).toBe(topicId);
      const [slack] = Object.values(withAll.findResources("AWS::Chatbot::SlackChannelConfiguration"));
      expect(slack.Properties).toMatchObject({ SlackWorkspaceId: "T0123ABCD", SlackChannelId: "C0456EFGH" });
      expect(target(slack.Properties.SnsTopicArns[0])).toBe(topicId);
      const [policy] = Object.values(withAll.findResources("AWS::SNS::TopicPolicy"));
      expect(JSON.stringify(policy.Properties.PolicyDocument)).toContain('"aws:SecureTransport":"false"');
    });

    it("notifies the topic from every stage alarm, when it fires and when it is OK again", () => {
      const [topicId] = Object.keys(withAll.findResources("AWS::SNS::Topic"));
      const alarms = Object.values(withAll.findResources("AWS::CloudWatch::Alarm")).filter((a) => !a.Properties.AlarmDescription.startsWith("[rollback]"));
      expect(alarms.length).toBeGreaterThan(20);
      for (const a of alarms) {
        expect(a.Properties.AlarmActions.map(target), a.Properties.AlarmName).toEqual([topicId]);
        expect(a.Properties.OKActions.map(target), a.Properties.AlarmName).toEqual([topicId]);
        expect(a.Properties.AlarmDescription).toMatch(/^\[(page|ticket)\] /);
      }
    });

    it("pages on what users feel: failed-turn rate, queue age, dead letters, streams refused, sustained Bedrock throttles, webhook 5xx", () => {
      const paged = Object.values(prod.findResources("AWS::CloudWatch::Alarm"))
        .filter((a) => a.Properties.AlarmDescription.startsWith("[page]"))
        .map((a) => String(a.Properties.AlarmName).replace("prod-threadwise-", ""));
      expect(paged.sort()).toEqual(
        ["FailedTurnRate", "OldestQueuedTurn", "DeadLetters", "StreamsRefused", "BedrockThrottles", "SlackWebhook5xx", "TeamsWebhook5xx"].sort(),
      );
    });

    it("fires no stage alarm on one event in one period, except what is never noise: a dead letter, a queued turn 10 minutes old", () => {
      const single = Object.values(prod.findResources("AWS::CloudWatch::Alarm")).filter(
        (a) => !a.Properties.AlarmDescription.startsWith("[rollback]") && a.Properties.Threshold <= 1 && (a.Properties.DatapointsToAlarm ?? 1) === 1,
      );
      expect(single.map((a) => String(a.Properties.AlarmName).replace("prod-threadwise-", ""))).toEqual(["DeadLetters"]);
    });

    it("throws at synth for a stage that keeps its data with no one to alarm", () => {
      expect(() => readStageConfig(new App({ context: { stage: "prod" } }).node)).toThrow(
        expect.objectContaining({ details: [expect.objectContaining({ path: "alarmTopicArn", message: expect.stringMatching(/must reach a person/) })] }),
      );
      expect(() => synthTemplate({ context: { ...prodContext, alarmEmails: undefined } })).toThrow(ValidationError);
    });

    it("uses a given topic instead, and refuses subscriptions for it", () => {
      const topic = "arn:aws:sns:us-east-1:123456789012:oncall";
      expect(readStageConfig(new App({ context: { stage: "prod", alarmTopicArn: topic } }).node).alarms.topicArn).toBe(topic);
      expect(() => readStageConfig(new App({ context: { stage: "prod", alarmTopicArn: topic, alarmEmails: "a@example.com" } }).node)).toThrow(ValidationError);
    });

    it("creates a topic for a dev stage too, without subscriptions unless named", () => {
      dev.resourceCountIs("AWS::SNS::Topic", 1);
      dev.resourceCountIs("AWS::SNS::Subscription", 0);
    });
  });

  describe("tags and names", () => {
    it("tags every taggable resource with the application and the stage", () => {
      const tagged = Object.entries(prod.toJSON().Resources as Record<string, { Type: string; Properties?: { Tags?: unknown } }>).filter(
        ([, r]) => r.Properties?.Tags !== undefined,
      );
      expect(tagged.length).toBeGreaterThan(30);
      for (const [id, r] of tagged) {
        const tags = r.Properties!.Tags;
        const pairs = Array.isArray(tags) ? Object.fromEntries(tags.map((t: { Key: string; Value: string }) => [t.Key, t.Value])) : tags;
        expect(pairs, `${id} (${r.Type})`).toMatchObject({ application: "threadwise", stage: "prod" });
      }
      // The kinds that take tags and that the stack has: none is left out.
      const types = new Set(tagged.map(([, r]) => r.Type));
      for (const type of [
        "AWS::Lambda::Function",
        "AWS::SQS::Queue",
        "AWS::SNS::Topic",
        "AWS::IAM::Role",
        "AWS::Logs::LogGroup",
        "AWS::SecretsManager::Secret",
        "AWS::CloudWatch::Alarm",
      ]) {
        expect(types.has(type), type).toBe(true);
      }
    });

    it("names the dashboard with the region, so a stage in two regions has two", () => {
      const [dashboard] = Object.values(prod.findResources("AWS::CloudWatch::Dashboard"));
      expect(dashboard.Properties.DashboardName).toBe("prod-threadwise-us-east-1");
      const [devDashboard] = Object.values(dev.findResources("AWS::CloudWatch::Dashboard"));
      expect(JSON.stringify(devDashboard.Properties.DashboardName)).toContain('"Ref":"AWS::Region"');
    });
  });

  describe("approvals sweep", () => {
    const withApprovals = synthTemplate({ context: { ...prodContext, toolApprovals: { create_follow_up: { require: "always" } } } });

    it("invokes the worker's live alias with the sweep event every interval when the stage configures approvals", () => {
      const rules = Object.values(withApprovals.findResources("AWS::Events::Rule")).filter((r) =>
        isApprovalSweepEvent(JSON.parse(r.Properties.Targets[0].Input)),
      );
      expect(rules).toHaveLength(1);
      const { ScheduleExpression, Targets } = rules[0].Properties;
      expect(ScheduleExpression).toBe(`rate(${APPROVAL_SWEEP_INTERVAL.toMinutes()} minutes)`);
      expect(Targets).toHaveLength(1);
      expect(target(Targets[0].Arn)).toMatch(/^WorkerFunctionLive/);
      expect(isApprovalSweepEvent(JSON.parse(Targets[0].Input))).toBe(true);
      expect(Targets[0].RetryPolicy).toEqual({ MaximumRetryAttempts: 0 });
    });

    it("has Lambda neither retry a failed sweep nor run one older than the interval: EventBridge's retry policy covers only delivery", () => {
      const configs = Object.values(withApprovals.findResources("AWS::Lambda::EventInvokeConfig"));
      expect(configs).toHaveLength(1);
      expect(target(configs[0].Properties.FunctionName)).toMatch(/^WorkerFunction/);
      // The alias's name, cut from its ARN: the live alias.
      expect(configs[0].Properties.Qualifier["Fn::Select"]).toEqual([7, { "Fn::Split": [":", { Ref: expect.stringMatching(/^WorkerFunctionLive/) }] }]);
      expect(configs[0].Properties).toMatchObject({
        MaximumRetryAttempts: 0,
        // The shorter of the schedules' intervals: an event older than the next run is dropped.
        MaximumEventAgeInSeconds: Math.min(APPROVAL_SWEEP_INTERVAL.toSeconds(), TURN_RECOVERY_INTERVAL.toSeconds()),
      });
    });

    it("lets the worker send to the turn queue, where the sweep puts the turns it resumes", () => {
      const policies = Object.values(withApprovals.findResources("AWS::IAM::Policy")).filter((p) =>
        target(p.Properties.Roles[0]).startsWith("WorkerFunctionRole"),
      );
      const actions = policies.flatMap((p) => p.Properties.PolicyDocument.Statement.flatMap((st: { Action: string | string[] }) => st.Action));
      expect(actions).toContain("sqs:SendMessage");
    });

    it("alarms when a run leaves overdue approvals for the next, with a runbook line that exists", () => {
      const backlog = alarm(withApprovals, "prod", "ApprovalSweepBacklog").Properties;
      expect(backlog).toMatchObject({ MetricName: APPROVAL_SWEEP_METRIC_NAMES.backlog, Statistic: "Sum", Threshold: 1 });
      const [, anchor] = /Runbook: docs\/operations\.md#([a-z0-9-]+)$/.exec(backlog.AlarmDescription) ?? [];
      expect(anchorsOf(RUNBOOK).has(anchor)).toBe(true);
    });

    it("adds no approvals schedule and no alarm for a stage without approvals, only the turn recovery and key schedules", () => {
      const rules = Object.values(prod.findResources("AWS::Events::Rule"));
      expect(rules.map((r) => JSON.parse(r.Properties.Targets[0].Input))).toEqual([{ task: "turn-recovery" }, { task: "key-maintenance" }]);
      expect(() => alarm(prod, "prod", "ApprovalSweepBacklog")).toThrow("no alarm");
    });
  });

  describe("turn recovery schedule", () => {
    it("invokes the worker's live alias with the recovery event every minute, not retried, in every stage", () => {
      const rules = Object.values(prod.findResources("AWS::Events::Rule")).filter((r) => isTurnRecoveryEvent(JSON.parse(r.Properties.Targets[0].Input)));
      expect(rules).toHaveLength(1);
      const { ScheduleExpression, Targets } = rules[0].Properties;
      expect(ScheduleExpression).toBe(`rate(${TURN_RECOVERY_INTERVAL.toMinutes()} minute)`);
      expect(target(Targets[0].Arn)).toMatch(/^WorkerFunctionLive/);
      expect(Targets[0].RetryPolicy).toEqual({ MaximumRetryAttempts: 0 });
    });
  });

  describe("key maintenance schedule", () => {
    it("invokes the worker's live alias with the key maintenance event every hour, not retried, in every stage", () => {
      for (const template of [prod, dev]) {
        const rules = Object.values(template.findResources("AWS::Events::Rule")).filter((r) =>
          isKeyMaintenanceEvent(JSON.parse(r.Properties.Targets[0].Input)),
        );
        expect(rules).toHaveLength(1);
        const { ScheduleExpression, Targets } = rules[0].Properties;
        expect(ScheduleExpression).toBe(`rate(${KEY_MAINTENANCE_INTERVAL.toHours()} hour)`);
        expect(target(Targets[0].Arn)).toMatch(/^WorkerFunctionLive/);
        expect(Targets[0].RetryPolicy).toEqual({ MaximumRetryAttempts: 0 });
      }
    });
  });

  describe("tracing", () => {
    it("traces every function with X-Ray and lets no trace capture a response or an error", () => {
      const ours = Object.values(prod.findResources("AWS::Lambda::Function")).filter((f) => String(f.Properties.FunctionName).startsWith("prod-threadwise-"));
      expect(ours).toHaveLength(SERVING.length + 1);
      for (const fn of ours) {
        expect(fn.Properties.TracingConfig, fn.Properties.FunctionName).toEqual({ Mode: "Active" });
        expect(fn.Properties.Environment.Variables).toMatchObject({ POWERTOOLS_TRACER_CAPTURE_RESPONSE: "false", POWERTOOLS_TRACER_CAPTURE_ERROR: "false" });
      }
    });
  });

  describe("queue timing", () => {
    it("keeps a queued turn 14 days, as long as its dead letters, and alarms on its age long before", () => {
      const queues = Object.values(prod.findResources("AWS::SQS::Queue")).map((q) => q.Properties);
      const turns = queues.find((q) => q.QueueName === "prod-threadwise-turns.fifo")!;
      const dead = queues.find((q) => q.QueueName === "prod-threadwise-turns-dlq.fifo")!;
      expect(turns.MessageRetentionPeriod).toBe(14 * 24 * 3600);
      expect(dead.MessageRetentionPeriod).toBe(turns.MessageRetentionPeriod);
      expect(alarm(prod, "prod", "OldestQueuedTurn").Properties.Threshold).toBeLessThan(turns.MessageRetentionPeriod / 100);
    });

    it.each([[300], [900]])("holds a conversation whose %s s worker crashes on every receive minutes, not an hour", (workerTimeoutSeconds) => {
      const template = synthTemplate({ context: { workerTimeoutSeconds } });
      const [queue] = Object.values(template.findResources("AWS::SQS::Queue", { Properties: { QueueName: "dev-threadwise-turns.fifo" } }));
      const visibility = queue.Properties.VisibilityTimeout as number;
      expect(visibility).toBe(visibilityTimeoutFor(Duration.seconds(workerTimeoutSeconds)).toSeconds());
      // Lambda refuses an event source whose queue hides a message for less than the function may run.
      expect(visibility).toBeGreaterThan(workerTimeoutSeconds);
      expect(visibility * queue.Properties.RedrivePolicy.maxReceiveCount).toBeLessThanOrEqual(50 * 60);
    });
  });

  describe("deployments", () => {
    it.each([
      ["prod", prod, "CodeDeployDefault.LambdaCanary10Percent5Minutes"],
      ["dev", dev, "CodeDeployDefault.LambdaAllAtOnce"],
    ])("shifts each serving function's live alias in %s with CodeDeploy and rolls back on its alarms", (stage, template, config) => {
      const groups = Object.values(template.findResources("AWS::CodeDeploy::DeploymentGroup"));
      expect(groups).toHaveLength(SERVING.length);
      const aliases = template.findResources("AWS::Lambda::Alias");
      const alarmsByLogicalId = template.findResources("AWS::CloudWatch::Alarm");
      for (const name of SERVING) {
        const [, alias] = Object.entries(aliases).find(([id]) => id.startsWith(`${capital(name)}FunctionLive`))!;
        expect(alias.Properties.Name).toBe(LIVE_ALIAS);
        expect(target(alias.Properties.FunctionVersion)).toMatch(new RegExp(`^${capital(name)}FunctionCurrentVersion`));
        const [groupId, group] = Object.entries(template.findResources("AWS::CodeDeploy::DeploymentGroup")).find(([id]) =>
          id.startsWith(`${capital(name)}FunctionDeployment`),
        )!;
        // CloudFormation hands the alias's updates to this deployment group.
        expect(target(alias.UpdatePolicy.CodeDeployLambdaAliasUpdate.DeploymentGroupName)).toBe(groupId);
        expect(group.Properties.DeploymentConfigName).toBe(config);
        expect(group.Properties.AutoRollbackConfiguration).toEqual({
          Enabled: true,
          Events: expect.arrayContaining(["DEPLOYMENT_FAILURE", "DEPLOYMENT_STOP_ON_ALARM"]),
        });
        const rollbackOn = group.Properties.AlarmConfiguration.Alarms.map((a: { Name: unknown }) => alarmsByLogicalId[target(a.Name)]?.Properties.AlarmName);
        expect(rollbackOn).toEqual(expect.arrayContaining([`${stage}-threadwise-${capital(name)}VersionErrors`]));
      }
    });

    /** The rollback alarms of a function's deployment group, by name. */
    const rollbackOf = (name: string) => {
      const [, group] = Object.entries(prod.findResources("AWS::CodeDeploy::DeploymentGroup")).find(([id]) =>
        id.startsWith(`${capital(name)}FunctionDeployment`),
      )!;
      const alarms = prod.findResources("AWS::CloudWatch::Alarm");
      return group.Properties.AlarmConfiguration.Alarms.map((a: { Name: unknown }) => alarms[target(a.Name)]) as Resource[];
    };
    const dimensionsOf = (a: Resource) => Object.fromEntries((a.Properties.Dimensions as { Name: string; Value: unknown }[]).map((d) => [d.Name, d.Value]));

    it("rolls each function back on its new version's own figures only: Lambda's ExecutedVersion of the live alias, and the version's turns and 5xx", () => {
      for (const name of SERVING) {
        const alarms = rollbackOf(name);
        expect(alarms.length).toBeGreaterThanOrEqual(2);
        for (const a of alarms) {
          const dimensions = dimensionsOf(a);
          // The version the alias points at, which CodeDeploy shifts to: the new one during a deployment.
          const version = dimensions.ExecutedVersion ?? dimensions.version;
          expect(JSON.stringify(version), a.Properties.AlarmName).toMatch(
            new RegExp(`"Fn::GetAtt":\\["${capital(name)}FunctionCurrentVersion[^"]*","Version"\\]`),
          );
          expect(a.Properties.Period, a.Properties.AlarmName).toBe(60);
          // CodeDeploy reads them; they page no one (the stage's alarms do).
          expect(a.Properties.AlarmActions).toBeUndefined();
        }
      }
      const errors = rollbackOf("api").find((a) => a.Properties.AlarmName === "prod-threadwise-ApiVersionErrors")!;
      expect(errors.Properties).toMatchObject({ Namespace: "AWS/Lambda", MetricName: "Errors" });
      expect(JSON.stringify(dimensionsOf(errors).Resource)).toContain(`:${LIVE_ALIAS}`);
    });

    it("leaves out of every rollback the shared failed-turn count and the HTTP API's 5xx, which count the old version and the intended 503s", () => {
      for (const name of SERVING) {
        const names = rollbackOf(name).map((a) => a.Properties.AlarmName);
        expect(names).not.toContain("prod-threadwise-FailedTurnRate");
        expect(names).not.toContain("prod-threadwise-Api5xx");
      }
      expect(rollbackOf("api").map((a) => a.Properties.MetricName)).toEqual(expect.arrayContaining(["VersionTurnsFailed", "VersionServerErrors"]));
      expect(rollbackOf("worker").map((a) => a.Properties.AlarmName)).toContain("prod-threadwise-WorkerVersionNearTimeout");
      expect(rollbackOf("slack").map((a) => a.Properties.MetricName)).toContain("VersionServerErrors");
      expect(rollbackOf("teams").map((a) => a.Properties.MetricName)).toContain("VersionServerErrors");
    });

    it("lets the API's integrations and the queue's event source invoke the live alias only", () => {
      for (const integration of Object.values(prod.findResources("AWS::ApiGatewayV2::Integration"))) {
        expect(target(integration.Properties.IntegrationUri)).toMatch(/^(Api|Slack|Teams)FunctionLive/);
      }
      const [mapping] = Object.values(prod.findResources("AWS::Lambda::EventSourceMapping"));
      expect(target(mapping.Properties.FunctionName)).toMatch(/^WorkerFunctionLive/);
    });

    it("gives CodeDeploy a role of its own that may only shift the aliases and read alarms", () => {
      const groups = Object.values(prod.findResources("AWS::CodeDeploy::DeploymentGroup"));
      const roles = prod.findResources("AWS::IAM::Role");
      const policies = Object.values(prod.findResources("AWS::IAM::Policy"));
      for (const group of groups) {
        const roleId = target(group.Properties.ServiceRoleArn);
        expect(roles[roleId].Properties.ManagedPolicyArns).toBeUndefined();
        const statements = policies
          .filter((p) => p.Properties.Roles.some((r: unknown) => target(r) === roleId))
          .flatMap((p) => p.Properties.PolicyDocument.Statement as { Action: string | string[]; Resource: unknown }[]);
        const grants = statements.map((s) => ({ actions: [s.Action].flat().sort(), resource: s.Resource === "*" ? "*" : target(s.Resource) }));
        expect(grants).toEqual([
          { actions: ["lambda:GetAlias", "lambda:GetProvisionedConcurrencyConfig", "lambda:UpdateAlias"], resource: expect.stringMatching(/FunctionLive/) },
          { actions: ["cloudwatch:DescribeAlarms"], resource: "*" },
        ]);
      }
    });
  });

  describe("stages", () => {
    it("pins prod to the account and region of STAGE_ENVIRONMENTS, with termination protection", () => {
      const { stack } = buildStack({ context: prodContext });
      expect({ account: stack.account, region: stack.region }).toEqual(STAGE_ENVIRONMENTS.prod);
      expect(stack.terminationProtection).toBe(true);
    });

    it("deploys an unlisted stage where the credentials point, deletable", () => {
      const { stack } = buildStack();
      expect(Token.isUnresolved(stack.account)).toBe(true);
      expect(stack.terminationProtection).toBe(false);
    });

    it("throws when a stage keeps its data but its account is not pinned", () => {
      const read = () => readStageConfig(new App({ context: { stage: "staging", retainData: true } }).node);
      expect(read).toThrow(ValidationError);
      expect(
        readStageConfig(new App({ context: { stage: "staging", retainData: true, alarmEmails: "oncall@example.com" } }).node, {
          staging: { account: "210987654321", region: "eu-west-1" },
        }).environment,
      ).toEqual({
        account: "210987654321",
        region: "eu-west-1",
      });
    });

    it("keeps the turn queue and its dead letters when a prod stack is deleted, not a dev one", () => {
      const policies = (template: Template) => Object.values(template.findResources("AWS::SQS::Queue")).map((q) => q.DeletionPolicy);
      expect(policies(prod)).toEqual(["Retain", "Retain"]);
      expect(policies(dev)).toEqual(["Delete", "Delete"]);
    });
  });
});
