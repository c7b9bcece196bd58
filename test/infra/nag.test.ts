import { Validations } from "aws-cdk-lib";
import { AwsSolutionsChecks } from "cdk-nag";
import type { IConstruct } from "constructs";
import { buildStack } from "./synth.js";

const prod = {
  stage: "prod",
  jwtIssuer: "https://login.example.com/",
  alarmEmails: "oncall@example.com",
  alarmUrls: "https://events.pagerduty.com/integration/abc123/enqueue",
  alarmSlackChannel: "T0123ABCD/C0456EFGH",
  secretArns: {
    database: "arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/threadwise/database",
    slackSigning: "arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/threadwise/slack-signing-AbC123",
  },
  secretsKmsKeyArn: "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
  bedrockModelId: "arn:aws:bedrock:eu-west-1:123456789012:application-inference-profile/abc123",
  bedrockFoundationModelId: "anthropic.claude-sonnet-4-20250514-v1:0",
};

/** Every AWS tool engine on, with each kind of wildcard the Athena grants need, recall's embeddings model, and MCP OAuth's KMS key. */
const tools = {
  athenaWorkgroup: "analytics",
  athenaDatabase: "sales",
  athenaOutputLocation: "s3://tw-results/athena",
  athenaDataBucketArns: "arn:aws:s3:::tw-lake",
  knowledgeBaseId: "KB12345678",
  powerBiTenantId: "contoso.onmicrosoft.com",
  powerBiGroupId: "0f8e7c1a-2b3c-4d5e-8f90-a1b2c3d4e5f6",
  powerBiDatasetId: "9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d",
  followUpWebhookUrl: "https://hooks.example.com/follow-ups",
  toolRoles: '{"create_follow_up":["analyst"]}',
  recallEmbeddingsModelId: "amazon.titan-embed-text-v2:0",
  mcpOAuth: "true",
};
const ATHENA_WILDCARDS = [
  "Resource::arn:<AWS::Partition>:glue:<AWS::Region>:<AWS::AccountId>:table/sales/*",
  "Resource::arn:aws:s3:::tw-lake/*",
  "Resource::arn:<AWS::Partition>:s3:::tw-results/athena/*",
];

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
      ["prod with imported secrets under a customer key and an application inference profile", prod],
      [
        "functions in a VPC with NAT and an Atlas private endpoint",
        { vpc: "nat", vpcNatGateways: 2, atlasPrivateEndpointServiceName: "com.amazonaws.vpce.eu-west-1.vpce-svc-0123456789abcdef0" },
      ],
      ["prod with every AWS tool engine", { ...prod, ...tools }],
      ["a results bucket instead of an output location", { ...tools, athenaOutputLocation: "", athenaResultsBucket: "tw-results" }],
    ])("returns no unacknowledged finding for %s", (_name, context) => {
      const { stack } = buildStack({ context });
      const report = new AwsSolutionsChecks().validateScope(stack);
      expect(report.violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath).join(",")}`)).toEqual([]);
    });

    it("returns findings once the acknowledgements are gone, so the check is live", () => {
      const { stack } = buildStack();
      const rules = new IgnoringAcknowledgements().validateScope(stack).violations.map((v) => v.ruleName.replace(/\[.*$/, ""));
      expect(new Set(rules)).toEqual(
        new Set(["AwsSolutions-L1", "AwsSolutions-IAM5", "AwsSolutions-APIG4", "AwsSolutions-SMG4", "AwsSolutions-COG2", "AwsSolutions-COG8"]),
      );
    });

    it("returns IAM5 for the network interface actions of functions in a VPC once the acknowledgements are gone", () => {
      const findings = new IgnoringAcknowledgements()
        .validateScope(buildStack({ context: { vpc: "nat" } }).stack)
        .violations.filter((v) => v.ruleName === "AwsSolutions-IAM5[Resource::*]")
        .flatMap((v) => v.violatingResources.map((r) => r.constructPath?.split("/")[1]));
      expect(new Set(findings)).toEqual(new Set(["ApiFunction", "WorkerFunction", "SlackFunction", "TeamsFunction", "SetupFunction", "StreamFunction"]));
    });
  });

  describe("AwsSolutionsChecks with the AWS tools", () => {
    it("returns IAM5 for exactly the Athena wildcards once the acknowledgements are gone", () => {
      const findings = (context: Record<string, unknown>) =>
        new IgnoringAcknowledgements()
          .validateScope(buildStack({ context }).stack)
          .violations.filter((v) => v.ruleName.startsWith("AwsSolutions-IAM5"))
          .map((v) => v.ruleName.replace(/^AwsSolutions-IAM5\[(.*)\]$/, "$1"));
      const before = new Set(findings({}));
      expect(
        findings(tools)
          .filter((f) => !before.has(f))
          .sort(),
      ).toEqual([...ATHENA_WILDCARDS].sort());
    });

    it("acknowledges the Athena wildcards on the roles of the functions that run turns (api, stream, worker) only", () => {
      const paths = acknowledgements(buildStack({ context: tools }).stack)
        .filter((a) => ATHENA_WILDCARDS.some((w) => a.id.endsWith(`AwsSolutions-IAM5[${w}]`)))
        .map((a) => a.path);
      expect(new Set(paths)).toEqual(new Set(["dev-threadwise/ApiFunction/Role", "dev-threadwise/StreamFunction/Role", "dev-threadwise/WorkerFunction/Role"]));
      expect(paths).toHaveLength(ATHENA_WILDCARDS.length * 3);
    });
  });

  describe("acknowledgements", () => {
    it("returns a reason of substance for every acknowledgement", () => {
      const acks = acknowledgements(buildStack({ context: tools }).stack);
      expect(acks.length).toBeGreaterThan(0);
      for (const ack of acks) expect(ack.reason.length, `${ack.id} on ${ack.path}`).toBeGreaterThan(60);
    });

    it("acknowledges APIG4 only on the public probes, description and MCP sign-in callback, and on the routes the functions verify themselves", () => {
      const routes = acknowledgements(buildStack().stack)
        .filter((a) => a.id.endsWith("AwsSolutions-APIG4"))
        .map((a) => a.path.split("/").at(-1));
      expect(routes.sort()).toEqual([
        "GET--healthz",
        "GET--openapi.json",
        "GET--readyz",
        "GET--v1--mcp--oauth--callback",
        "POST--slack--events",
        "POST--slack--interactivity",
        "POST--teams--messages",
      ]);
    });

    it("says in the webhook acknowledgements that the function verifies the request", () => {
      const webhooks = acknowledgements(buildStack().stack).filter((a) => a.id.endsWith("AwsSolutions-APIG4") && a.path.includes("POST"));
      for (const ack of webhooks) expect(ack.reason).toMatch(/function verifies/);
    });
  });
});
