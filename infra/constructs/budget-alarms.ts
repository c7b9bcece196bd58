import { Duration } from "aws-cdk-lib";
import { Alarm, AlarmStatusWidget, ComparisonOperator, type Dashboard, GraphWidget, Metric, TextWidget, TreatMissingData } from "aws-cdk-lib/aws-cloudwatch";
import { SnsAction } from "aws-cdk-lib/aws-cloudwatch-actions";
import type { ITopic } from "aws-cdk-lib/aws-sns";
import { Construct } from "constructs";
import { LIMIT_METRIC_NAMES, TENANT_PROPERTY } from "../../lib/observability/limit-metrics.js";
import { TURN_METRICS_NAMESPACE } from "../../lib/queue/turn-metrics.js";

/** The shares of a tenant's monthly budget that alarm: a warning, and the budget used up (its users are refused). */
export const BUDGET_ALARM_PERCENTS = [80, 100] as const;
/** Period of the spend figures and the budget alarms. */
export const BUDGET_PERIOD = Duration.minutes(5);
/** Where the budget alarms' runbook line is. */
export const BUDGET_RUNBOOK = "docs/limits.md#budget-alarms";

export interface BudgetAlarmsProps {
  stage: string;
  /** Powertools service name: the `service` dimension of the usage metrics. */
  serviceName: string;
  /** Where the spend widgets go (the stage's operations dashboard). */
  dashboard: Dashboard;
  /** Where the alarms notify; without it they only change state. */
  alarmTopic?: ITopic;
}

/**
 * The spend widgets and the budget alarms (docs/limits.md, "Operations"). Tenants are not known
 * at synth time, and the tenant is a property of the usage records, not a dimension: each
 * settled call publishes its tenant's spend this month as a share of its budget
 * (`TenantBudgetPercent`), so the metric's Maximum in a period is the most-spent tenant's, and one
 * alarm per threshold watches every tenant. Which tenant it is, Logs Insights tells from the property.
 */
export class BudgetAlarms extends Construct {
  readonly alarms: Record<string, Alarm> = {};

  constructor(scope: Construct, id: string, props: BudgetAlarmsProps) {
    super(scope, id);
    const metric = (metricName: string, statistic: string, label?: string) =>
      new Metric({ namespace: TURN_METRICS_NAMESPACE, metricName, dimensionsMap: { service: props.serviceName }, statistic, period: BUDGET_PERIOD, label });
    const budgetPercent = metric(LIMIT_METRIC_NAMES.tenantBudgetPercent, "Maximum");
    for (const percent of BUDGET_ALARM_PERCENTS) {
      const name = `TenantBudget${percent}`;
      const alarm = new Alarm(this, name, {
        alarmName: `${props.stage}-threadwise-${name}`,
        alarmDescription:
          `[ticket] ${props.stage}: a tenant has spent ${percent} % of its monthly model budget` +
          `${percent >= 100 ? " (its users are refused until the month ends)" : ""}. Runbook: ${BUDGET_RUNBOOK}`,
        metric: budgetPercent,
        threshold: percent,
        evaluationPeriods: 1,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        // No data: no tenant with a budget made a call in the period.
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });
      if (props.alarmTopic) {
        alarm.addAlarmAction(new SnsAction(props.alarmTopic));
        alarm.addOkAction(new SnsAction(props.alarmTopic));
      }
      this.alarms[name] = alarm;
    }
    props.dashboard.addWidgets(
      new TextWidget({
        markdown:
          `**Model spend.** Every tenant together; one tenant's: Logs Insights on \`${TENANT_PROPERTY}\`, or \`GET /v1/admin/usage\`. ` +
          `Alarms at ${BUDGET_ALARM_PERCENTS.join(" % and ")} % of the most-spent tenant's monthly budget ([docs/limits.md](${BUDGET_RUNBOOK})).`,
        width: 24,
        height: 2,
      }),
      new GraphWidget({
        title: "Model spend (USD per 5 minutes, all tenants)",
        left: [metric(LIMIT_METRIC_NAMES.tenantCostUsd, "Sum", "USD")],
        width: 8,
      }),
      new GraphWidget({
        title: "Model tokens (weighted, per 5 minutes)",
        left: [metric(LIMIT_METRIC_NAMES.tenantTokens, "Sum", "tokens")],
        width: 8,
      }),
      new GraphWidget({
        title: "Most-spent tenant (% of monthly budget)",
        left: [metric(LIMIT_METRIC_NAMES.tenantBudgetPercent, "Maximum", "most-spent tenant, % of its monthly budget")],
        leftAnnotations: BUDGET_ALARM_PERCENTS.map((value) => ({ value, label: `${value} %` })),
        width: 8,
      }),
      new AlarmStatusWidget({ title: "Tenant budgets", alarms: Object.values(this.alarms), width: 24, height: 2 }),
    );
  }
}
