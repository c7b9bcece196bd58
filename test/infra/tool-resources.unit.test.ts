import { athenaResourceArns, knowledgeBaseArn } from "../../infra/constructs/tool-resources.js";
import type { AthenaStageConfig } from "../../infra/stage-config.js";

const ctx = { partition: "aws", region: "eu-west-1", account: "123456789012" };
const athena: AthenaStageConfig = {
  workgroup: "analytics",
  database: "sales",
  catalog: "AwsDataCatalog",
  outputLocation: "s3://tw-results/athena",
  results: { bucket: "tw-results", prefix: "athena" },
  dataBucketArns: ["arn:aws:s3:::tw-lake"],
};

describe("tool-resources", () => {
  describe("athenaResourceArns", () => {
    it("returns the workgroup, the Glue catalog, database and its tables, the data and the results prefix", () => {
      expect(athenaResourceArns(athena, ctx)).toEqual({
        workgroup: "arn:aws:athena:eu-west-1:123456789012:workgroup/analytics",
        glue: [
          "arn:aws:glue:eu-west-1:123456789012:catalog",
          "arn:aws:glue:eu-west-1:123456789012:database/sales",
          "arn:aws:glue:eu-west-1:123456789012:table/sales/*",
        ],
        dataBuckets: ["arn:aws:s3:::tw-lake"],
        dataObjects: ["arn:aws:s3:::tw-lake/*"],
        resultsBucket: "arn:aws:s3:::tw-results",
        resultsObjects: "arn:aws:s3:::tw-results/athena/*",
      });
    });

    it("returns every object of the results bucket when the results location has no prefix", () => {
      const arns = athenaResourceArns({ ...athena, results: { bucket: "tw-results", prefix: "" } }, ctx);
      expect(arns.resultsObjects).toBe("arn:aws:s3:::tw-results/*");
    });

    it("returns no results resources when no results location is configured", () => {
      const arns = athenaResourceArns({ ...athena, outputLocation: undefined, results: undefined }, ctx);
      expect([arns.resultsBucket, arns.resultsObjects]).toEqual([undefined, undefined]);
    });

    it("returns no Glue resources for a data catalog other than AwsDataCatalog", () => {
      expect(athenaResourceArns({ ...athena, catalog: "partner_catalog" }, ctx).glue).toEqual([]);
    });
  });

  describe("knowledgeBaseArn", () => {
    it("returns the knowledge base in the stack's region by default and in its own region when given", () => {
      expect(knowledgeBaseArn("KB12345678", undefined, ctx)).toBe("arn:aws:bedrock:eu-west-1:123456789012:knowledge-base/KB12345678");
      expect(knowledgeBaseArn("KB12345678", "us-west-2", ctx)).toBe("arn:aws:bedrock:us-west-2:123456789012:knowledge-base/KB12345678");
    });
  });
});
