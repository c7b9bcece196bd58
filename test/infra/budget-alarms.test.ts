import { describe, expect, it } from "vitest";
import { BUDGET_ALARM_PERCENTS } from "../../infra/constructs/budget-alarms.js";
import { DEFAULT_STAGE_LIMITS, limitsEnvironment, readStageConfig } from "../../infra/stage-config.js";
import { App } from "aws-cdk-lib";
import { LIMIT_METRIC_NAMES } from "../../lib/observability/limit-metrics.js";
import { synthTemplate } from "./synth.js";

describe("BudgetAlarms", () => {
  it("returns an alarm at 80 % and at 100 % on the most-spent tenant's share of its budget, with no tenant dimension", () => {
    const template = synthTemplate({ context: { stage: "dev" } });
    for (const percent of BUDGET_ALARM_PERCENTS) {
      const alarms = Object.values(template.findResources("AWS::CloudWatch::Alarm", { Properties: { AlarmName: `dev-threadwise-TenantBudget${percent}` } }));
      expect(alarms).toHaveLength(1);
      const props = (alarms[0] as { Properties: Record<string, any> }).Properties;
      expect(props).toMatchObject({ MetricName: LIMIT_METRIC_NAMES.tenantBudgetPercent, Statistic: "Maximum", Threshold: percent });
      expect(props.Dimensions.map((d: { Name: string }) => d.Name)).toEqual(["service"]);
      expect(props.AlarmDescription).toContain("docs/limits.md#budget-alarms");
    }
  });

  it("returns the stage's default limits in the environment of the functions that run turns, and not in the webhooks'", () => {
    const template = synthTemplate({ context: { stage: "dev" } });
    const functions = Object.values(template.findResources("AWS::Lambda::Function")) as {
      Properties: { Environment?: { Variables?: Record<string, unknown> } };
    }[];
    const withLimits = functions.filter((f) => f.Properties.Environment?.Variables?.LIMIT_USER_TOKENS_PER_DAY !== undefined);
    expect(withLimits).toHaveLength(3);
    expect(withLimits[0].Properties.Environment?.Variables).toMatchObject(limitsEnvironment(DEFAULT_STAGE_LIMITS));
  });

  it("returns the context's limits over the stage defaults, and throws for a limit that is not a positive number", () => {
    const read = (limits: unknown) => readStageConfig(new App({ context: { limits } }).node).limits;
    expect(read('{"user": {"tokensPerDay": 5}, "tenant": {"usdPerMonth": 500}}')).toEqual({
      user: { ...DEFAULT_STAGE_LIMITS.user, tokensPerDay: 5 },
      tenant: { usdPerMonth: 500 },
    });
    expect(() => read({ user: { tokensPerDay: 0 } })).toThrow(/invalid CDK context/);
    expect(() => read({ users: {} })).toThrow(/invalid CDK context/);
  });
});
