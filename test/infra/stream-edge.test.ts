import { App } from "aws-cdk-lib";
import { Match, type Template } from "aws-cdk-lib/assertions";
import { AwsSolutionsChecks } from "cdk-nag";
import { DEFAULT_STREAM_RATE_LIMIT_PER_5_MIN } from "../../infra/constructs/stream-edge.js";
import { readStageConfig } from "../../infra/stage-config.js";
import { buildStack, synthTemplate } from "./synth.js";

/** A retained stage as deployed (pinned to us-east-1 in STAGE_ENVIRONMENTS), with the distribution on. */
const prod = {
  stage: "prod",
  jwtIssuer: "https://login.example.com/",
  alarmEmails: "oncall@example.com",
  streamCdn: true,
};
const WEB_ACL_ARN = "arn:aws:wafv2:us-east-1:123456789012:global/webacl/shared-edge/a1b2c3d4-5678-90ab-cdef-1234567890ab";
/** CloudFront's managed CachingDisabled policy. */
const CACHING_DISABLED = "4135ea2d-6df8-44a3-9df3-4b5a84be39ad";

const streamUrlOf = (template: Template) => {
  const [url] = Object.values(template.findResources("AWS::Lambda::Url")) as { Properties: { AuthType: string; InvokeMode: string } }[];
  return url.Properties;
};

describe("StreamEdge", () => {
  describe("by default (streamCdn unset)", () => {
    it("creates no distribution and no web ACL, and leaves the Function URL public for the handler's JWT check", () => {
      const template = synthTemplate({ context: { ...prod, streamCdn: "" } });
      template.resourceCountIs("AWS::CloudFront::Distribution", 0);
      template.resourceCountIs("AWS::WAFv2::WebACL", 0);
      expect(streamUrlOf(template)).toMatchObject({ AuthType: "NONE", InvokeMode: "RESPONSE_STREAM" });
    });
  });

  describe("with streamCdn=true in prod", () => {
    const template = synthTemplate({ context: prod });

    it("makes the Function URL AWS_IAM, invocable by this distribution alone through origin access control", () => {
      expect(streamUrlOf(template)).toMatchObject({ AuthType: "AWS_IAM", InvokeMode: "RESPONSE_STREAM" });
      template.hasResourceProperties("AWS::CloudFront::OriginAccessControl", {
        OriginAccessControlConfig: { OriginAccessControlOriginType: "lambda", SigningBehavior: "always", SigningProtocol: "sigv4" },
      });
      template.hasResourceProperties("AWS::Lambda::Permission", {
        Action: "lambda:InvokeFunctionUrl",
        Principal: "cloudfront.amazonaws.com",
        SourceArn: Match.anyValue(),
      });
    });

    it("forwards every method and viewer header but Host, caches nothing, and serves HTTPS only", () => {
      template.hasResourceProperties("AWS::CloudFront::Distribution", {
        DistributionConfig: Match.objectLike({
          DefaultCacheBehavior: Match.objectLike({
            AllowedMethods: ["GET", "HEAD", "OPTIONS", "PUT", "PATCH", "POST", "DELETE"],
            CachePolicyId: CACHING_DISABLED,
            ViewerProtocolPolicy: "https-only",
          }),
          WebACLId: { "Fn::GetAtt": [Match.stringLikeRegexp("WebAcl"), "Arn"] },
        }),
      });
    });

    it("puts a CLOUDFRONT web ACL in front: a rate limit per address and AWS's managed rule sets", () => {
      template.hasResourceProperties("AWS::WAFv2::WebACL", {
        Scope: "CLOUDFRONT",
        DefaultAction: { Allow: {} },
        Rules: Match.arrayWith([
          Match.objectLike({
            Action: { Block: {} },
            Statement: { RateBasedStatement: { Limit: DEFAULT_STREAM_RATE_LIMIT_PER_5_MIN, AggregateKeyType: "IP" } },
          }),
          Match.objectLike({ Statement: { ManagedRuleGroupStatement: Match.objectLike({ Name: "AWSManagedRulesCommonRuleSet" }) } }),
        ]),
      });
    });

    it("names the distribution, not the Function URL, to the api's clients and in the StreamingUrl output", () => {
      const [api] = Object.values(template.findResources("AWS::Lambda::Function", { Properties: { FunctionName: "prod-threadwise-api" } })) as {
        Properties: { Environment: { Variables: Record<string, unknown> } };
      }[];
      expect(JSON.stringify(api.Properties.Environment.Variables.STREAMING_URL)).toContain("DomainName");
      expect(JSON.stringify(template.findOutputs("StreamingUrl"))).toContain("DomainName");
    });

    it("returns no unacknowledged cdk-nag finding", () => {
      const report = new AwsSolutionsChecks().validateScope(buildStack({ context: prod }).stack);
      expect(report.violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath).join(",")}`)).toEqual([]);
    });
  });

  describe("with streamWebAclArn", () => {
    it("uses the given web ACL and creates none", () => {
      const template = synthTemplate({ context: { ...prod, streamWebAclArn: WEB_ACL_ARN } });
      template.resourceCountIs("AWS::WAFv2::WebACL", 0);
      template.hasResourceProperties("AWS::CloudFront::Distribution", { DistributionConfig: Match.objectLike({ WebACLId: WEB_ACL_ARN }) });
    });
  });

  describe("readStageConfig", () => {
    it("throws for streamCdn in a stage not pinned to us-east-1 without streamWebAclArn, and for streamWebAclArn alone", () => {
      const issues = (context: Record<string, unknown>) => {
        try {
          readStageConfig(new App({ context }).node);
          return [];
        } catch (error) {
          return ((error as { details?: { path: string }[] }).details ?? []).map((d) => d.path);
        }
      };
      expect(issues({ streamCdn: true })).toEqual(["streamWebAclArn"]);
      expect(issues({ streamWebAclArn: WEB_ACL_ARN })).toEqual(["streamWebAclArn"]);
      expect(issues({ streamCdn: true, streamWebAclArn: WEB_ACL_ARN })).toEqual([]);
    });
  });
});
