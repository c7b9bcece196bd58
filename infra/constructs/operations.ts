import { Duration, Stack } from "aws-cdk-lib";
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
import type { IAlias, IFunction } from "aws-cdk-lib/aws-lambda";
import type { ITopic } from "aws-cdk-lib/aws-sns";
import type { IQueue } from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";
import { APPROVAL_SWEEP_METRIC_NAMES } from "../../lib/observability/approval-sweep-metrics.js";
import { TURN_FAILURE_REASONS } from "../../lib/observability/turn-failure-reason.js";
import {
  CHANNEL_DIMENSION,
  FUNCTION_DIMENSION,
  REASON_DIMENSION,
  TURN_OUTCOME_METRIC_NAMES,
  VERSION_DIMENSION,
  VERSION_METRIC_NAMES,
  WEBHOOK_METRIC_NAMES,
} from "../../lib/observability/turn-outcome-metrics.js";
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
/** Consecutive periods of throttling that page: a busy quarter of an hour, not a burst the retries absorb. */
export const BEDROCK_THROTTLES_ALARM_PERIODS = 3;
/** Share of finished turns that failed, in percent, that pages (over {@link RATE_ALARM_DATAPOINTS} of {@link RATE_ALARM_PERIODS} periods). */
export const FAILED_TURN_RATE_ALARM_PERCENT = 5;
/** Failed turns in a period below which the rate does not page: at low traffic one failure is not 5 % of anything. */
export const FAILED_TURN_RATE_MIN_FAILURES = 3;
/** Streams refused (the stream function throttled) in a period that alarm. */
export const STREAMS_REFUSED_ALARM_THRESHOLD = 5;
/** Periods a sustained alarm looks at, and how many of them must breach: one bad period is a blip, two of three a trend. */
export const RATE_ALARM_PERIODS = 3;
export const RATE_ALARM_DATAPOINTS = 2;
/** Period of the rollback alarms: a canary lasts 5 minutes, so they must see a minute's data, not a 5-minute sum. */
export const ROLLBACK_ALARM_PERIOD = Duration.minutes(1);
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
  /** Where alarms notify, on ALARM and on OK: the stage's topic (created with its subscriptions, or imported). */
  alarmTopic: ITopic;
  /** The live alias of each serving function: its rollback alarms read the alias's current (new) version only. */
  aliases: { api: IAlias; worker: IAlias; slack: IAlias; teams: IAlias; stream: IAlias };
  /** Whether the worker runs the approvals sweep (the stage configures approvals): its figures and alarm. */
  approvalSweep?: boolean;
}

/** Who an alarm is for: `page` wakes someone (users feel it now); `ticket` is looked at in working hours. */
export type AlarmSeverity = "page" | "ticket";

/** An alarm's threshold and what it watches: "at least threshold in `datapoints` of `periods` periods" (default one of one). */
interface AlarmSpec {
  description: string;
  /** Heading anchor of its runbook line in {@link RUNBOOK}. */
  runbook: string;
  metric: IMetric;
  threshold: number;
  severity: AlarmSeverity;
  periods?: number;
  datapoints?: number;
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
  /** The alarms that notify the topic, by id. */
  readonly alarms: Record<string, Alarm> = {};
  /** The topic the alarms notify. */
  readonly alarmTopicArn: string;
  /** Each serving function's rollback alarms, on its new version's own figures; they notify no one (CodeDeploy reads them). */
  private readonly rollback: Record<keyof OperationsProps["functions"], Alarm[]>;

  constructor(scope: Construct, id: string, props: OperationsProps) {
    super(scope, id);
    this.alarmTopicArn = props.alarmTopic.topicArn;
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
      specs[`${name}Errors`] = {
        description: `${name}: function errors`,
        runbook: "function-errors",
        metric: fn.metricErrors(sum),
        threshold: 1,
        severity: "ticket",
        periods: RATE_ALARM_PERIODS,
        datapoints: RATE_ALARM_DATAPOINTS,
      };
      specs[`${name}Throttles`] = {
        description: `${name}: throttled invocations`,
        runbook: "function-throttles",
        metric: fn.metricThrottles(sum),
        threshold: 1,
        severity: "ticket",
        periods: RATE_ALARM_PERIODS,
        datapoints: RATE_ALARM_DATAPOINTS,
      };
    }
    specs.FailedTurnRate = {
      description:
        `${FAILED_TURN_RATE_ALARM_PERCENT} % or more of finished turns failed for their users ` + `(at least ${FAILED_TURN_RATE_MIN_FAILURES} in a period)`,
      runbook: "failed-turns",
      metric: new MathExpression({
        // Finished turns: the failed ones and the completed ones (one TurnDurationMs sample each).
        expression: `IF(failed >= ${FAILED_TURN_RATE_MIN_FAILURES}, 100 * failed / (failed + completed), 0)`,
        usingMetrics: {
          failed: turnMetric(TURN_OUTCOME_METRIC_NAMES.failed, "Sum"),
          completed: turnMetric(TURN_METRICS.turnDurationMs, "SampleCount"),
        },
        label: "failed turns (%)",
        period: ALARM_PERIOD,
      }),
      threshold: FAILED_TURN_RATE_ALARM_PERCENT,
      severity: "page",
      periods: RATE_ALARM_PERIODS,
      datapoints: RATE_ALARM_DATAPOINTS,
    };
    specs.OldestQueuedTurn = {
      description: `a queued turn has waited ${DEFAULT_OLDEST_TURN_ALARM.toMinutes()} minutes or more`,
      runbook: "oldest-queued-turn",
      metric: props.queue.metricApproximateAgeOfOldestMessage({ period: ALARM_PERIOD, statistic: "Maximum" }),
      threshold: DEFAULT_OLDEST_TURN_ALARM.toSeconds(),
      severity: "page",
    };
    specs.DeadLetters = {
      description: "turns in the dead-letter queue (failed every retry)",
      runbook: "dead-letters",
      metric: props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({ period: ALARM_PERIOD, statistic: "Maximum" }),
      threshold: 1,
      severity: "page",
    };
    specs.BedrockThrottles = {
      description: `Bedrock throttled the model's invocations for ${BEDROCK_THROTTLES_ALARM_PERIODS * ALARM_PERIOD.toMinutes()} minutes`,
      runbook: "bedrock-throttles",
      metric: bedrockMetric("InvocationThrottles"),
      threshold: BEDROCK_THROTTLES_ALARM_THRESHOLD,
      severity: "page",
      periods: BEDROCK_THROTTLES_ALARM_PERIODS,
      datapoints: BEDROCK_THROTTLES_ALARM_PERIODS,
    };
    specs.StreamsRefused = {
      description: "the streaming URL refused streams (its function's concurrency is used up)",
      runbook: "streams-refused",
      metric: props.functions.stream.metricThrottles(sum),
      threshold: STREAMS_REFUSED_ALARM_THRESHOLD,
      severity: "page",
      periods: RATE_ALARM_PERIODS,
      datapoints: RATE_ALARM_DATAPOINTS,
    };
    specs.BedrockErrors = {
      description: "Bedrock failed the model's invocations (server errors)",
      runbook: "bedrock-errors",
      metric: bedrockMetric("InvocationServerErrors"),
      threshold: BEDROCK_SERVER_ERRORS_ALARM_THRESHOLD,
      severity: "ticket",
      periods: RATE_ALARM_PERIODS,
      datapoints: RATE_ALARM_DATAPOINTS,
    };
    specs.WorkerNearTimeout = {
      description: `a worker invocation took ${WORKER_DURATION_ALARM_SHARE * 100} % of its timeout or more`,
      runbook: "worker-near-timeout",
      metric: props.functions.worker.metricDuration({ period: ALARM_PERIOD, statistic: "Maximum" }),
      threshold: Math.floor(props.workerTimeout.toMilliseconds() * WORKER_DURATION_ALARM_SHARE),
      severity: "ticket",
    };
    specs.Api5xx = {
      description: "API 5xx responses (the intended 503s included)",
      runbook: "api-5xx",
      metric: props.httpApi.metricServerError(sum),
      threshold: 1,
      severity: "ticket",
      periods: RATE_ALARM_PERIODS,
      datapoints: RATE_ALARM_DATAPOINTS,
    };
    for (const [channel, title] of Object.entries(channels)) {
      specs[`${title}Webhook4xx`] = {
        description: `a spike of 4xx answers to ${title}`,
        runbook: "webhook-4xx",
        metric: turnMetric(WEBHOOK_METRIC_NAMES.clientErrors, "Sum", { [CHANNEL_DIMENSION]: channel }),
        threshold: WEBHOOK_4XX_ALARM_THRESHOLD,
        severity: "ticket",
      };
      specs[`${title}Webhook5xx`] = {
        description: `5xx answers to ${title}`,
        runbook: "webhook-5xx",
        metric: turnMetric(WEBHOOK_METRIC_NAMES.serverErrors, "Sum", { [CHANNEL_DIMENSION]: channel }),
        threshold: WEBHOOK_5XX_ALARM_THRESHOLD,
        severity: "page",
        periods: RATE_ALARM_PERIODS,
        datapoints: RATE_ALARM_DATAPOINTS,
      };
    }
    if (props.approvalSweep) {
      specs.ApprovalSweepBacklog = {
        description: "the approvals sweep left overdue approvals for its next run (it falls behind)",
        runbook: "approval-sweep-backlog",
        metric: turnMetric(APPROVAL_SWEEP_METRIC_NAMES.backlog, "Sum"),
        threshold: 1,
        severity: "ticket",
      };
    }
    for (const [alarmId, spec] of Object.entries(specs)) this.alarms[alarmId] = this.alarm(alarmId, spec, props);
    this.rollback = this.versionAlarms(props);

    const fns = Object.entries(props.functions) as [string, IFunction][];
    // The region in the name: a stage deployed in two regions has two dashboards, not one overwritten.
    this.dashboard = new Dashboard(this, "Dashboard", { dashboardName: `${props.stage}-threadwise-${Stack.of(this).region}` });
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
      new AlarmStatusWidget({
        title: "Rollback alarms (the live version of each function)",
        alarms: Object.values(this.rollback).flat(),
        width: 24,
        height: 3,
      }),
    );
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
   * The alarms a deployment of this function rolls back on, all on the alias's current version
   * (the one being shifted to): its errors (Lambda's per-version `Errors`, dimension
   * `ExecutedVersion`), the turns it failed for a reason a deploy can cause (not a busy model),
   * its server errors other than the intended 503s (api and webhooks), the worker's duration.
   */
  rollbackAlarms(name: keyof OperationsProps["functions"]): Alarm[] {
    return this.rollback[name];
  }

  private versionAlarms(props: OperationsProps): Record<keyof OperationsProps["functions"], Alarm[]> {
    const period = ROLLBACK_ALARM_PERIOD;
    const result = {} as Record<keyof OperationsProps["functions"], Alarm[]>;
    for (const [name, alias] of Object.entries(props.aliases) as [keyof OperationsProps["functions"], IAlias][]) {
      const fn = props.functions[name];
      const title = `${name[0].toUpperCase()}${name.slice(1)}`;
      const version = alias.version.version;
      const lambda = (metricName: string, statistic: string) =>
        new Metric({
          namespace: "AWS/Lambda",
          metricName,
          dimensionsMap: { FunctionName: fn.functionName, Resource: `${fn.functionName}:${alias.aliasName}`, ExecutedVersion: version },
          statistic,
          period,
        });
      const own = (metricName: string) =>
        new Metric({
          namespace: METRICS_NAMESPACE,
          metricName,
          dimensionsMap: { service: props.serviceName, [FUNCTION_DIMENSION]: fn.functionName, [VERSION_DIMENSION]: version },
          statistic: "Sum",
          period,
        });
      const specs: Record<string, Omit<AlarmSpec, "severity">> = {
        [`${title}VersionErrors`]: {
          description: `${name}: errors of the new version`,
          runbook: "function-errors",
          metric: lambda("Errors", "Sum"),
          threshold: 1,
        },
      };
      if (name === "api" || name === "worker" || name === "stream") {
        specs[`${title}VersionTurnsFailed`] = {
          description: `${name}: turns the new version failed (a busy model not counted)`,
          runbook: "failed-turns",
          metric: own(VERSION_METRIC_NAMES.turnsFailed),
          threshold: 1,
        };
      }
      if (name === "api" || name === "slack" || name === "teams") {
        specs[`${title}VersionServerErrors`] = {
          description: `${name}: 500 and 502 answers of the new version (intended 503s not counted)`,
          runbook: name === "api" ? "api-5xx" : "webhook-5xx",
          metric: own(VERSION_METRIC_NAMES.serverErrors),
          threshold: 1,
        };
      }
      if (name === "worker") {
        specs.WorkerVersionNearTimeout = {
          description: `worker: an invocation of the new version took ${WORKER_DURATION_ALARM_SHARE * 100} % of its timeout or more`,
          runbook: "worker-near-timeout",
          metric: lambda("Duration", "Maximum"),
          threshold: Math.floor(props.workerTimeout.toMilliseconds() * WORKER_DURATION_ALARM_SHARE),
        };
      }
      result[name] = Object.entries(specs).map(([id, spec]) => this.alarm(id, { ...spec, severity: "ticket" }, props, false));
    }
    return result;
  }

  /** An alarm named `<stage>-threadwise-<id>`; `notify`: it tells the topic when it fires and when it is OK again. */
  private alarm(id: string, spec: AlarmSpec, props: OperationsProps, notify = true): Alarm {
    const alarm = new Alarm(this, id, {
      alarmName: `${props.stage}-threadwise-${id}`,
      alarmDescription: `${notify ? `[${spec.severity}] ` : "[rollback] "}${props.stage}: ${spec.description}. Runbook: ${RUNBOOK}#${spec.runbook}`,
      metric: spec.metric,
      threshold: spec.threshold,
      evaluationPeriods: spec.periods ?? 1,
      datapointsToAlarm: spec.datapoints ?? spec.periods ?? 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      // No data means no invocations, no requests, an empty queue: nothing is wrong.
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
    if (notify) {
      alarm.addAlarmAction(new SnsAction(props.alarmTopic));
      alarm.addOkAction(new SnsAction(props.alarmTopic));
    }
    return alarm;
  }
}
