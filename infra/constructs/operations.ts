import { Duration } from "aws-cdk-lib";
import type { HttpApi } from "aws-cdk-lib/aws-apigatewayv2";
import {
  Alarm,
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
import { TURN_METRIC_NAMES, TURN_METRICS_NAMESPACE } from "../../lib/queue/turn-metrics.js";

/** Namespace and names of the per-turn metrics are the handlers' (lib/queue), so the dashboard cannot drift from them. */
export const METRICS_NAMESPACE = TURN_METRICS_NAMESPACE;
export const TURN_METRICS = TURN_METRIC_NAMES;

/** Period of every alarm and dashboard metric. */
export const ALARM_PERIOD = Duration.minutes(5);

export interface OperationsProps {
  stage: string;
  /** Powertools service name; the per-turn metrics carry it as their `service` dimension. */
  serviceName: string;
  functions: Record<string, IFunction>;
  queue: IQueue;
  deadLetterQueue: IQueue;
  httpApi: HttpApi;
  /** Where alarms notify; without it they only change state on the dashboard. */
  alarmTopic?: ITopic;
}

/**
 * The stage's dashboard (turn metrics, functions, queue, API) and its alarms: any function error
 * or throttle, any 5xx from the API, and any message in the dead-letter queue (a turn that failed
 * every retry and was not answered).
 */
export class Operations extends Construct {
  readonly dashboard: Dashboard;
  readonly alarms: Alarm[] = [];

  constructor(scope: Construct, id: string, props: OperationsProps) {
    super(scope, id);
    const turnMetric = (metricName: string, statistic: string) =>
      new Metric({
        namespace: METRICS_NAMESPACE,
        metricName,
        dimensionsMap: { service: props.serviceName },
        statistic,
        period: ALARM_PERIOD,
      });

    for (const [name, fn] of Object.entries(props.functions)) {
      this.alarm(`${name}Errors`, `${props.stage} ${name}: function errors`, fn.metricErrors({ period: ALARM_PERIOD, statistic: "Sum" }), props);
      this.alarm(`${name}Throttles`, `${props.stage} ${name}: throttled invocations`, fn.metricThrottles({ period: ALARM_PERIOD, statistic: "Sum" }), props);
    }
    this.alarm(
      "DeadLetters",
      `${props.stage}: turns in the dead-letter queue (failed every retry)`,
      props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({ period: ALARM_PERIOD, statistic: "Maximum" }),
      props,
    );
    this.alarm("Api5xx", `${props.stage}: API 5xx responses`, props.httpApi.metricServerError({ period: ALARM_PERIOD, statistic: "Sum" }), props);

    const fns = Object.entries(props.functions);
    this.dashboard = new Dashboard(this, "Dashboard", { dashboardName: `${props.stage}-threadwise` });
    this.dashboard.addWidgets(
      new TextWidget({
        markdown: `# Threadwise ${props.stage}\nPer-turn metrics (namespace ${METRICS_NAMESPACE}), functions, queue, API.`,
        width: 24,
        height: 2,
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
  }

  private alarm(id: string, description: string, metric: IMetric, props: OperationsProps): void {
    const alarm = new Alarm(this, id, {
      alarmName: `${props.stage}-threadwise-${id}`,
      alarmDescription: description,
      metric,
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      // No data means no invocations, no requests, an empty queue: nothing is wrong.
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
    if (props.alarmTopic) alarm.addAlarmAction(new SnsAction(props.alarmTopic));
    this.alarms.push(alarm);
  }
}
