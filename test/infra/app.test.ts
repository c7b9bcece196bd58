import { describe, expect, it } from "vitest";
import { runCli } from "../support/cli.js";

/** `npx cdk synth -c …` runs infra/app.ts with the context in CDK_CONTEXT_JSON, as here. */
const synth = (context: Record<string, unknown>) => runCli("infra/app.ts", [], { CDK_CONTEXT_JSON: JSON.stringify(context) });

describe("infra/app (cdk synth): a context value it refuses answered in one line", { timeout: 90_000 }, () => {
  it.each([
    [{ secretArn: "arn:aws:secretsmanager:us-east-1:123456789012:secret:x" }, /^invalid CDK context: secretArn: replaced by secretArns: /],
    [{ slackRoles: "[1]" }, /^invalid CDK context: slackRoles: /],
    [{ mongodbConnectionBudget: 10 }, /^invalid CDK context: mongodbConnectionBudget: /],
  ])("exits 1 with one line naming the key and where to fix it, not a stack trace, for %j", async (context, line) => {
    const { code, errors } = await synth(context);
    expect(code).toBe(1);
    expect(errors).toEqual([expect.stringMatching(line)]);
    expect(errors[0]).toMatch(/; fix it with -c <key>=<value> or in cdk\.json \(see docs\/deploying\.md, "Deploying to AWS"\)\.$/);
  });
});
