import { bedrockResourceArns } from "../../infra/bedrock-model.js";
import { ValidationError } from "../../lib/errors.js";

const ctx = { partition: "aws", region: "eu-west-1", account: "123456789012" };

describe("bedrock-model", () => {
  describe("bedrockResourceArns", () => {
    it("returns the regional foundation model for a plain model id", () => {
      expect(bedrockResourceArns("anthropic.claude-3-haiku-20240307-v1:0", ctx)).toEqual([
        "arn:aws:bedrock:eu-west-1::foundation-model/anthropic.claude-3-haiku-20240307-v1:0",
      ]);
    });

    it("returns the profile and the model in any region for a cross-region profile id", () => {
      expect(bedrockResourceArns("eu.anthropic.claude-sonnet-4-20250514-v1:0", ctx)).toEqual([
        "arn:aws:bedrock:eu-west-1:123456789012:inference-profile/eu.anthropic.claude-sonnet-4-20250514-v1:0",
        "arn:aws:bedrock:*::foundation-model/anthropic.claude-sonnet-4-20250514-v1:0",
      ]);
    });

    it("returns the given profile ARN and its model for a profile ARN", () => {
      const arn = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/global.anthropic.claude-sonnet-4-20250514-v1:0";
      expect(bedrockResourceArns(arn, ctx)).toEqual([arn, "arn:aws:bedrock:*::foundation-model/anthropic.claude-sonnet-4-20250514-v1:0"]);
    });

    it("returns a foundation model ARN unchanged", () => {
      const arn = "arn:aws:bedrock:us-east-1::foundation-model/amazon.nova-pro-v1:0";
      expect(bedrockResourceArns(arn, ctx)).toEqual([arn]);
    });

    it("returns the application profile and the named model", () => {
      const arn = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc123";
      expect(bedrockResourceArns(arn, ctx, "amazon.nova-pro-v1:0")).toEqual([arn, "arn:aws:bedrock:*::foundation-model/amazon.nova-pro-v1:0"]);
    });

    it("throws when an application profile comes without its model", () => {
      expect(() => bedrockResourceArns("arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc123", ctx)).toThrow(ValidationError);
    });

    it("throws when the ARN is not a Bedrock model ARN", () => {
      expect(() => bedrockResourceArns("arn:aws:s3:::bucket", ctx)).toThrow(ValidationError);
    });
  });
});
