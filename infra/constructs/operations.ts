import { Duration } from "aws-cdk-lib";
import type { HttpApi } from "aws-cdk-lib/aws-apigatewayv2";
import {
  Alarm,
  AlarmStatusWidget,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  MathExpression,
  Metric,
  TextWidget,
  TreatMissingData,
  type IMetric,
} from "aws-cdk-lib/aws-cloudwatch";
import { SnsAction } from "aws-cdk-lib/aws-cloudwatch-actions";
import type { IFunction } from "aws-cdk-lib/aws-lambda";
import type { ITopic } from "aws-cdk-lib/aws-sns";
import type { IQueue } from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";
import { APPROVAL_SWEEP_METRIC_NAMES } from "../../lib/observability/approval-sweep-metrics.js";
import { TURN_FAILURE_REASONS } from "../../lib/observability/turn-failure-reason.js";
import { CHANNEL_DIMENSION, REASON_DIMENSION, TURN_OUTCOME_METRIC_NAMES, WEBHOOK_METRIC_NAMES } from "../../lib/observability/turn-outcome-metrics.js";
import { TURN_METRIC_NAMES, TURN_METRICS_NAMESPACE } from "../../lib/queue/turn-metrics.js";

/** Namespace and names of the per-turn metrics are the handlers' (lib/queue), so the dashboard cannot drift from them. */
export const METRICS_NAMESPACE = TURN_METRICS_NAMESPACE;
export const TURN_METRICS = TURN_METRIC_NAMES;

/** Period of every alarm and dashboard metric. */
export const ALARM_PERIOD = Duration.minutes(5);
/** Where each alarm's runbook line is: `docs/operations.md`, at the anchor its description names. */
export const RUNBOOK = "docs/operations.md";
/** Share of the worker's timeout that a turn's invocation may take before it is "near" it. */
export const WORKER_DURATION_ALARM_SHARE = 0.8;
/** Age of the oldest queued turn that alarms: a queued turn should start within a minute or two, retries included. */
export const DEFAULT_OLDEST_TURN_ALARM = Duration.minutes(10);
/** Bedrock throttles in a period that alarm: the SDK retries each throttled call up to three times, so a few are absorbed. */
export const BEDROCK_THROTTLES_ALARM_THRESHOLD = 10;
/** Bedrock server errors in a period that alarm: a single one is retried by the SDK and the worker. */
export const BEDROCK_SERVER_ERRORS_ALARM_THRESHOLD = 3;
/** Webhook 4xx answers in a period that alarm: a few are strangers or Slack's retries; a spike is a key or signing mismatch. */
export const WEBHOOK_4XX_ALARM_THRESHOLD = 10;
/** Webhook 5xx answers in a period that alarm: Slack and Teams retry, so one is noise and a few are an outage. */
export const WEBHOOK_5XX_ALARM_THRESHOLD = 3;

export interface OperationsProps {
  stage: string;
  /** Powertools service name; the per-turn metrics carry it as their `service` dimension. */
  serviceName: string;
  functions: { api: IFunction; worker: IFunction; slack: IFunction; teams: IFunction; stream: IFunction };
  /** The worker's timeout: its duration alarm fires at {@link WORKER_DURATION_ALARM_SHARE} of it. */
  workerTimeout: Duration;
  /** The model id the functions call Bedrock with: the `ModelId` dimension of Bedrock's own metrics. */
  bedrockModelId: string;
  queue: IQueue;
  deadLetterQueue: IQueue;
  httpApi: HttpApi;
  /** Where alarms notify; without it they only change state on the dashboard. */
  alarmTopic?: ITopic;
  /** Whether the worker runs the approvals sweep (the stage configures approvals): its figures and alarm. */
  approvalSweep?: boolean;
}

/** An alarm's threshold and what it watches; every alarm is "at least threshold in one period". */
interface AlarmSpec {
  description: string;
  /** Heading anchor of its runbook line in {@link RUNBOOK}. */
  runbook: string;
  metric: IMetric;
  threshold: number;
}

/**
 * The stage's dashboard and its alarms on what users feel: turns that failed, a queue that does
 * not drain, Bedrock throttling or failing, a worker near its timeout, webhooks refusing or
 * failing, and every function's errors and throttles, the DLQ and API 5xx. Each alarm's
 * description names its runbook line; the function deployments roll back on the ones
 * {@link rollbackAlarms} lists.
 */
export class Operations extends Construct {
  readonly dashboard: Dashboard;
  readonly alarms: Record<string, Alarm> = {};

  constructor(scope: Construct, id: string, props: OperationsProps) {
    super(scope, id);
    const turnMetric = (metricName: string, statistic: string, dimensions: Record<string, string> = {}) =>
      new Metric({
        namespace: METRICS_NAMESPACE,
        metricName,
        dimensionsMap: { service: props.serviceName, ...dimensions },
        statistic,
        period: ALARM_PERIOD,
      });
    const bedrockMetric = (metricName: string) =>
      new Metric({ namespace: "AWS/Bedrock", metricName, dimensionsMap: { ModelId: props.bedrockModelId }, statistic: "Sum", period: ALARM_PERIOD });
    const sum = { period: ALARM_PERIOD, statistic: "Sum" };
    const channels = { slack: "Slack", teams: "Teams" } as const;

    const specs: Record<string, AlarmSpec> = {};
    for (const [name, fn] of Object.entries(props.functions)) {
      specs[`${name}Errors`] = { description: `${name}: function errors`, runbook: "function-errors", metric: fn.metricErrors(sum), threshold: 1 };
      specs[`${name}Throttles`] = {
        description: `${name}: throttled invocations`,
        runbook: "function-throttles",
        metric: fn.metricThrottles(sum),
        threshold: 1,
      };
    }
    specs.TurnsFailed = {
      description: "turns failed for their users (given up by the worker, or failed in the request)",
      runbook: "failed-turns",
      metric: turnMetric(TURN_OUTCOME_METRIC_NAMES.failed, "Sum"),
      threshold: 1,
    };
    specs.OldestQueuedTurn = {
      description: `a queued turn has waited ${DEFAULT_OLDEST_TURN_ALARM.toMinutes()} minutes or more`,
      runbook: "oldest-queued-turn",
      metric: props.queue.metricApproximateAgeOfOldestMessage({ period: ALARM_PERIOD, statistic: "Maximum" }),
      threshold: DEFAULT_OLDEST_TURN_ALARM.toSeconds(),
    };
    specs.DeadLetters = {
      description: "turns in the dead-letter queue (failed every retry)",
      runbook: "dead-letters",
      metric: props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({ period: ALARM_PERIOD, statistic: "Maximum" }),
      threshold: 1,
    };
    specs.BedrockThrottles = {
      description: "Bedrock throttled the model's invocations",
      runbook: "bedrock-throttles",
      metric: bedrockMetric("InvocationThrottles"),
      threshold: BEDROCK_THROTTLES_ALARM_THRESHOLD,
    };
    specs.BedrockErrors = {
      description: "Bedrock failed the model's invocations (server errors)",
      runbook: "bedrock-errors",
      metric: bedrockMetric("InvocationServerErrors"),
      threshold: BEDROCK_SERVER_ERRORS_ALARM_THRESHOLD,
    };
    specs.WorkerNearTimeout = {
      description: `a worker invocation took ${WORKER_DURATION_ALARM_SHARE * 100} % of its timeout or more`,
      runbook: "worker-near-timeout",
      metric: props.functions.worker.metricDuration({ period: ALARM_PERIOD, statistic: "Maximum" }),
      threshold: Math.floor(props.workerTimeout.toMilliseconds() * WORKER_DURATION_ALARM_SHARE),
    };
    specs.Api5xx = { description: "API 5xx responses", runbook: "api-5xx", metric: props.httpApi.metricServerError(sum), threshold: 1 };
    for (const [channel, title] of Object.entries(channels)) {
      specs[`${title}Webhook4xx`] = {
        description: `a spike of 4xx answers to ${title}`,
        runbook: "webhook-4xx",
        metric: turnMetric(WEBHOOK_METRIC_NAMES.clientErrors, "Sum", { [CHANNEL_DIMENSION]: channel }),
        threshold: WEBHOOK_4XX_ALARM_THRESHOLD,
      };
      specs[`${title}Webhook5xx`] = {
        description: `5xx answers to ${title}`,
        runbook: "webhook-5xx",
        metric: turnMetric(WEBHOOK_METRIC_NAMES.serverErrors, "Sum", { [CHANNEL_DIMENSION]: channel }),
        threshold: WEBHOOK_5XX_ALARM_THRESHOLD,
      };
    }
    if (props.approvalSweep) {
      specs.ApprovalSweepBacklog = {
        description: "the approvals sweep left overdue approvals for its next run (it falls behind)",
        runbook: "approval-sweep-backlog",
        metric: turnMetric(APPROVAL_SWEEP_METRIC_NAMES.backlog, "Sum"),
        threshold: 1,
      };
    }
    for (const [alarmId, spec] of Object.entries(specs)) this.alarms[alarmId] = this.alarm(alarmId, spec, props);

    const fns = Object.entries(props.functions) as [string, IFunction][];
    this.dashboard = new Dashboard(this, "Dashboard", { dashboardName: `${props.stage}-threadwise` });
    this.dashboard.addWidgets(
      new TextWidget({
        markdown: `# Threadwise ${props.stage}\nPer-turn metrics (namespace ${METRICS_NAMESPACE}), functions, queue, API.`,
        width: 24,
        height: 2,
      }),
    );
    const byReason = (metricName: string) =>
      TURN_FAILURE_REASONS.map((reason) => turnMetric(metricName, "Sum", { [REASON_DIMENSION]: reason }).with({ label: reason }));
    this.dashboard.addWidgets(new AlarmStatusWidget({ title: "Alarms", alarms: Object.values(this.alarms), width: 24, height: 4 }));
    this.dashboard.addWidgets(
      new GraphWidget({
        title: "Turns queued, retried, given up, failed (sum)",
        left: Object.values(TURN_OUTCOME_METRIC_NAMES).map((m) => turnMetric(m, "Sum").with({ label: m })),
        width: 8,
      }),
      new GraphWidget({ title: "Turns failed by reason (sum)", left: byReason(TURN_OUTCOME_METRIC_NAMES.failed), width: 8 }),
      new GraphWidget({ title: "Turns retried by reason (sum)", left: byReason(TURN_OUTCOME_METRIC_NAMES.retried), width: 8 }),
    );
    this.dashboard.addWidgets(
      new GraphWidget({
        title: "Bedrock invocations, throttles, errors (sum)",
        left: ["Invocations", "InvocationThrottles", "InvocationServerErrors", "InvocationClientErrors"].map((m) => bedrockMetric(m).with({ label: m })),
        width: 8,
      }),
      new GraphWidget({
        title: "Worker duration (ms) and its timeout",
        left: ["p50", "p99", "Maximum"].map((statistic) => props.functions.worker.metricDuration({ period: ALARM_PERIOD, statistic, label: statistic })),
        leftAnnotations: [{ value: props.workerTimeout.toMilliseconds(), label: "timeout" }],
        width: 8,
      }),
      new GraphWidget({
        title: "Webhook 4xx and 5xx (sum)",
        left: Object.keys(channels).flatMap((channel) => [
          turnMetric(WEBHOOK_METRIC_NAMES.clientErrors, "Sum", { [CHANNEL_DIMENSION]: channel }).with({ label: `${channel} 4xx` }),
          turnMetric(WEBHOOK_METRIC_NAMES.serverErrors, "Sum", { [CHANNEL_DIMENSION]: channel }).with({ label: `${channel} 5xx` }),
        ]),
        width: 8,
      }),
    );
    this.dashboard.addWidgets(
      new GraphWidget({
        title: "Tokens per turn (average)",
        left: [TURN_METRICS.stateTokens, TURN_METRICS.viewTokens, TURN_METRICS.inputTokens, TURN_METRICS.outputTokens].map((m) => turnMetric(m, "Average")),
        width: 12,
      }),
      new GraphWidget({
        title: "Turn duration (ms)",
        left: ["p50", "p90", "p99"].map((s) => turnMetric(TURN_METRICS.turnDurationMs, s).with({ label: s })),
        width: 12,
      }),
    );
    this.dashboard.addWidgets(
      new GraphWidget({
        title: "Prompt cache: share of input tokens (%)",
        left: [
          new MathExpression({
            expression: "100 * read / input",
            usingMetrics: { read: turnMetric(TURN_METRICS.cacheReadTokens, "Sum"), input: turnMetric(TURN_METRICS.inputTokens, "Sum") },
            label: "read from cache",
            period: ALARM_PERIOD,
          }),
          new MathExpression({
            expression: "100 * written / input",
            usingMetrics: { written: turnMetric(TURN_METRICS.cacheWriteTokens, "Sum"), input: turnMetric(TURN_METRICS.inputTokens, "Sum") },
            label: "written to cache",
            period: ALARM_PERIOD,
          }),
        ],
        width: 12,
      }),
      new GraphWidget({
        title: "Model cost per turn (USD, average)",
        left: [turnMetric(TURN_METRICS.costUsd, "Average")],
        width: 12,
      }),
    );
    this.dashboard.addWidgets(
      new GraphWidget({
        title: "Tool calls and omitted outputs (sum)",
        left: [turnMetric(TURN_METRICS.toolCalls, "Sum"), turnMetric(TURN_METRICS.omittedOutputs, "Sum")],
        right: [turnMetric(TURN_METRICS.turnDurationMs, "SampleCount").with({ label: "Turns" })],
        width: 12,
      }),
      new GraphWidget({
        title: "Turn queue",
        left: [
          props.queue.metricApproximateNumberOfMessagesVisible({ period: ALARM_PERIOD, label: "Waiting" }),
          props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({ period: ALARM_PERIOD, label: "Dead letters" }),
        ],
        right: [props.queue.metricApproximateAgeOfOldestMessage({ period: ALARM_PERIOD, label: "Oldest (s)" })],
        width: 12,
      }),
    );
    this.dashboard.addWidgets(
      new GraphWidget({ title: "Function errors", left: fns.map(([n, f]) => f.metricErrors({ period: ALARM_PERIOD, label: n })), width: 8 }),
      new GraphWidget({ title: "Function throttles", left: fns.map(([n, f]) => f.metricThrottles({ period: ALARM_PERIOD, label: n })), width: 8 }),
      new GraphWidget({
        title: "Function duration p90 (ms)",
        left: fns.map(([n, f]) => f.metricDuration({ period: ALARM_PERIOD, statistic: "p90", label: n })),
        width: 8,
      }),
    );
    this.dashboard.addWidgets(
      new GraphWidget({
        title: "API requests",
        left: [
          props.httpApi.metricCount({ period: ALARM_PERIOD, label: "Requests" }),
          props.httpApi.metricClientError({ period: ALARM_PERIOD, label: "4xx" }),
          props.httpApi.metricServerError({ period: ALARM_PERIOD, label: "5xx" }),
        ],
        width: 12,
      }),
      new GraphWidget({ title: "API latency p90 (ms)", left: [props.httpApi.metricLatency({ period: ALARM_PERIOD, statistic: "p90" })], width: 12 }),
    );
    if (props.approvalSweep) {
      this.dashboard.addWidgets(
        new GraphWidget({
          title: "Approvals sweep: expired, turns resumed, runs behind (sum)",
          left: Object.values(APPROVAL_SWEEP_METRIC_NAMES).map((m) => turnMetric(m, "Sum").with({ label: m })),
          width: 12,
        }),
      );
    }
  }

  /**
   * The alarms a deployment of this function rolls back on: its own errors, failed turns, and
   * what its traffic shows (the API's 5xx, the worker near its timeout, its channel's 5xx).
   */
  rollbackAlarms(name: keyof OperationsProps["functions"]): Alarm[] {
    const own = {
      api: ["Api5xx"],
      worker: ["WorkerNearTimeout"],
      slack: ["SlackWebhook5xx"],
      teams: ["TeamsWebhook5xx"],
      // A stream's status is written before its turn ends; its errors and failed turns tell.
      stream: [],
    }[name];
    return [`${name}Errors`, "TurnsFailed", ...own].map((id) => this.alarms[id]);
  }

  private alarm(id: string, spec: AlarmSpec, props: OperationsProps): Alarm {
    const alarm = new Alarm(this, id, {
      alarmName: `${props.stage}-threadwise-${id}`,
      alarmDescription: `${props.stage}: ${spec.description}. Runbook: ${RUNBOOK}#${spec.runbook}`,
      metric: spec.metric,
      threshold: spec.threshold,
      evaluationPeriods: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      // No data means no invocations, no requests, an empty queue: nothing is wrong.
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
    if (props.alarmTopic) alarm.addAlarmAction(new SnsAction(props.alarmTopic));
    return alarm;
  }
}
