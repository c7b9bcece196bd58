import { Duration, Validations } from "aws-cdk-lib";
import {
  AllowedMethods,
  CachePolicy,
  type CfnDistribution,
  Distribution,
  HttpVersion,
  OriginRequestPolicy,
  PriceClass,
  SecurityPolicyProtocol,
  ViewerProtocolPolicy,
} from "aws-cdk-lib/aws-cloudfront";
import { FunctionUrlOrigin } from "aws-cdk-lib/aws-cloudfront-origins";
import type { IFunctionUrl } from "aws-cdk-lib/aws-lambda";
import { CfnWebACL } from "aws-cdk-lib/aws-wafv2";
import { Construct } from "constructs";

/**
 * Requests one client address may make to the streaming URL in 5 minutes before AWS WAF blocks
 * it (WAF's rate-based rules count over 5 minutes). A follower reconnects at most a few times a
 * minute, a turn is one POST: 300 leaves a person far below it and stops a flood of one address.
 */
export const DEFAULT_STREAM_RATE_LIMIT_PER_5_MIN = 300;
/**
 * How long CloudFront waits for the next bytes of a stream (its origin response timeout, at most
 * 60 s without a quota increase): a stream silent longer is ended, and the client reconnects with
 * `Last-Event-ID` (docs/streaming.md).
 */
export const STREAM_ORIGIN_READ_TIMEOUT = Duration.seconds(60);

export interface StreamEdgeProps {
  stage: string;
  /** The streaming function's URL, `AWS_IAM`: only this distribution's signed requests reach it. */
  url: IFunctionUrl;
  /** A CLOUDFRONT-scope web ACL to use; unset, one is created (the stack must then be in us-east-1). */
  webAclArn?: string;
}

/**
 * CloudFront with AWS WAF in front of the streaming Function URL (docs/deploying.md, "The
 * streaming URL behind CloudFront"). Origin access control signs every request to the URL with
 * SigV4 in `Authorization`, so the URL (`AWS_IAM`) refuses anything that did not come through
 * here and WAF; the caller's bearer token travels in `x-threadwise-authorization`, and a POST
 * carries its body's SHA-256 in `x-amz-content-sha256` (Lambda takes no unsigned payload).
 * Nothing is cached; every viewer header but `Host` reaches the function.
 */
export class StreamEdge extends Construct {
  readonly distribution: Distribution;
  /** `https://<distribution domain>/`: what clients are sent to instead of the Function URL. */
  readonly url: string;

  constructor(scope: Construct, id: string, props: StreamEdgeProps) {
    super(scope, id);
    const webAclArn = props.webAclArn ?? this.webAcl(props.stage).attrArn;
    this.distribution = new Distribution(this, "Distribution", {
      comment: `${props.stage}-threadwise streaming URL`,
      defaultBehavior: {
        origin: FunctionUrlOrigin.withOriginAccessControl(props.url, { readTimeout: STREAM_ORIGIN_READ_TIMEOUT }),
        allowedMethods: AllowedMethods.ALLOW_ALL,
        cachePolicy: CachePolicy.CACHING_DISABLED,
        originRequestPolicy: OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER,
        viewerProtocolPolicy: ViewerProtocolPolicy.HTTPS_ONLY,
        compress: false,
      },
      webAclId: webAclArn,
      httpVersion: HttpVersion.HTTP2_AND_3,
      priceClass: PriceClass.PRICE_CLASS_100,
      minimumProtocolVersion: SecurityPolicyProtocol.TLS_V1_2_2021,
    });
    this.url = `https://${this.distribution.distributionDomainName}/`;
    const resource = this.distribution.node.defaultChild as CfnDistribution;
    Validations.of(resource).acknowledge(
      { id: "AwsSolutions-CFR1", reason: "Clients are wherever the API's users are; AWS WAF's rules and rate limit, not geography, bound the streaming URL." },
      {
        id: "AwsSolutions-CFR3",
        reason:
          "Every request is logged by the streaming function itself (with its correlation id) and counted by AWS WAF's metrics and sampled " +
          "requests; CloudFront's standard logs would need a bucket with object ACLs for the same lines.",
      },
      {
        id: "AwsSolutions-CFR4",
        reason:
          "The distribution's own *.cloudfront.net name and certificate (no custom domain): its security policy is CloudFront's; " +
          "a custom domain with an ACM certificate takes TLSv1.2_2021 (docs/deploying.md).",
      },
    );
  }

  /** AWS's common rule set and known bad inputs, and a rate limit per client address. */
  private webAcl(stage: string): CfnWebACL {
    const visibility = (metricName: string) => ({ cloudWatchMetricsEnabled: true, sampledRequestsEnabled: true, metricName });
    const managed = (name: string, priority: number, counted: string[] = []) => ({
      name,
      priority,
      overrideAction: { none: {} },
      statement: {
        managedRuleGroupStatement: {
          vendorName: "AWS",
          name,
          ...(counted.length > 0 && { ruleActionOverrides: counted.map((rule) => ({ name: rule, actionToUse: { count: {} } })) }),
        },
      },
      visibilityConfig: visibility(`${stage}-threadwise-stream-${name}`),
    });
    return new CfnWebACL(this, "WebAcl", {
      name: `${stage}-threadwise-stream`,
      scope: "CLOUDFRONT",
      defaultAction: { allow: {} },
      visibilityConfig: visibility(`${stage}-threadwise-stream`),
      rules: [
        {
          name: "RatePerAddress",
          priority: 0,
          action: { block: {} },
          statement: { rateBasedStatement: { limit: DEFAULT_STREAM_RATE_LIMIT_PER_5_MIN, aggregateKeyType: "IP" } },
          visibilityConfig: visibility(`${stage}-threadwise-stream-rate`),
        },
        // Its 8 KB body limit would refuse a long question the API accepts (MAX_MESSAGE_CHARS): counted, not blocked.
        managed("AWSManagedRulesCommonRuleSet", 1, ["SizeRestrictions_BODY"]),
        managed("AWSManagedRulesKnownBadInputsRuleSet", 2),
      ],
    });
  }
}
