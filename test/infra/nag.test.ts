import { Validations } from "aws-cdk-lib";
import { AwsSolutionsChecks } from "cdk-nag";
import type { IConstruct } from "constructs";
import { buildStack } from "./synth.js";

const prod = {
  stage: "prod",
  jwtIssuer: "https://login.example.com/",
  secretArn: "arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/threadwise/credentials",
  bedrockModelId: "arn:aws:bedrock:eu-west-1:123456789012:application-inference-profile/abc123",
  bedrockFoundationModelId: "anthropic.claude-sonnet-4-20250514-v1:0",
};

/** The same checks with every acknowledgement ignored: what the stack would report without them. */
class IgnoringAcknowledgements extends AwsSolutionsChecks {}
(IgnoringAcknowledgements.prototype as unknown as { isAcknowledged: () => boolean }).isAcknowledged = () => false;

/** Every acknowledgement recorded in the tree, with the construct it sits on. */
function acknowledgements(root: IConstruct): { path: string; id: string; reason: string }[] {
  return root.node
    .findAll()
    .flatMap((c) =>
      c.node.metadata
        .filter((m) => m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
        .flatMap((m) => Object.entries(m.data as Record<string, string>).map(([id, reason]) => ({ path: c.node.path, id, reason }))),
    );
}

describe("ThreadwiseStack cdk-nag", () => {
  describe("AwsSolutionsChecks", () => {
    it.each([
      ["dev defaults", {}],
      ["prod with an imported secret and an application inference profile", prod],
    ])("returns no unacknowledged finding for %s", (_name, context) => {
      const { stack } = buildStack({ context });
      const report = new AwsSolutionsChecks().validateScope(stack);
      expect(report.violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath).join(",")}`)).toEqual([]);
    });

    it("returns findings once the acknowledgements are gone, so the check is live", () => {
      const { stack } = buildStack();
      const rules = new IgnoringAcknowledgements().validateScope(stack).violations.map((v) => v.ruleName.replace(/\[.*$/, ""));
      expect(new Set(rules)).toEqual(new Set(["AwsSolutions-L1", "AwsSolutions-IAM5", "AwsSolutions-APIG4", "AwsSolutions-SMG4"]));
    });
  });

  describe("acknowledgements", () => {
    it("returns a reason of substance for every acknowledgement", () => {
      const acks = acknowledgements(buildStack().stack);
      expect(acks.length).toBeGreaterThan(0);
      for (const ack of acks) expect(ack.reason.length, `${ack.id} on ${ack.path}`).toBeGreaterThan(60);
    });

    it("acknowledges APIG4 only on the routes that the functions verify themselves", () => {
      const routes = acknowledgements(buildStack().stack)
        .filter((a) => a.id.endsWith("AwsSolutions-APIG4"))
        .map((a) => a.path.split("/").at(-1));
      expect(routes.sort()).toEqual(["GET--healthz", "POST--slack--events", "POST--teams--messages"]);
    });

    it("says in the webhook acknowledgements that the function verifies the request", () => {
      const webhooks = acknowledgements(buildStack().stack).filter((a) => a.id.endsWith("AwsSolutions-APIG4") && !a.path.includes("healthz"));
      for (const ack of webhooks) expect(ack.reason).toMatch(/function verifies/);
    });
  });
});
