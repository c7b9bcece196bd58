import { DEFAULT_ATHENA_CATALOG } from "../../lib/config/tools-config.js";
import type { BedrockArnContext } from "../bedrock-model.js";
import type { AthenaStageConfig } from "../stage-config.js";

/** IAM resources of the Athena SQL engine, by the grant that needs them. */
export interface AthenaResourceArns {
  workgroup: string;
  /**
   * The Glue catalog, the database and its tables. Empty for another data catalog than
   * `AwsDataCatalog`: what such a catalog needs (another account's Glue, a Lambda connector) is
   * not knowable from its name.
   */
  glue: string[];
  /** Table data: buckets for listing, their objects for reading. */
  dataBuckets: string[];
  dataObjects: string[];
  /** Query results: the bucket for listing, the objects under the results prefix for reading and writing. */
  resultsBucket?: string;
  resultsObjects?: string;
}

/**
 * The resources a caller of Athena needs for one workgroup and one Glue database, and nothing
 * wider. Athena reads Glue and S3 with the caller's permissions, so these are the function's.
 * With `ctx` holding CloudFormation pseudo parameters the ARNs are tokens; with cdk-nag's
 * placeholders they are the names cdk-nag reports.
 */
export function athenaResourceArns(athena: AthenaStageConfig, ctx: BedrockArnContext): AthenaResourceArns {
  const glue = `arn:${ctx.partition}:glue:${ctx.region}:${ctx.account}`;
  const s3 = (bucket: string, key?: string) => `arn:${ctx.partition}:s3:::${bucket}${key === undefined ? "" : `/${key}`}`;
  const results = athena.results;
  return {
    workgroup: `arn:${ctx.partition}:athena:${ctx.region}:${ctx.account}:workgroup/${athena.workgroup}`,
    glue: athena.catalog === DEFAULT_ATHENA_CATALOG ? [`${glue}:catalog`, `${glue}:database/${athena.database}`, `${glue}:table/${athena.database}/*`] : [],
    dataBuckets: athena.dataBucketArns,
    dataObjects: athena.dataBucketArns.map((arn) => `${arn}/*`),
    resultsBucket: results && s3(results.bucket),
    resultsObjects: results && s3(results.bucket, results.prefix === "" ? "*" : `${results.prefix}/*`),
  };
}

/** The knowledge base `bedrock:Retrieve` is allowed on, in its own region when one is given. */
export function knowledgeBaseArn(id: string, region: string | undefined, ctx: BedrockArnContext): string {
  return `arn:${ctx.partition}:bedrock:${region ?? ctx.region}:${ctx.account}:knowledge-base/${id}`;
}
