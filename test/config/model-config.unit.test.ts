import { describe, expect, it } from "vitest";
import { DEFAULT_BEDROCK_MODEL_ID, DEFAULT_MODEL_PRICES, DEFAULT_REGION, loadModelConfig } from "../../lib/config/model-config.js";
import { ValidationError } from "../../lib/errors.js";

describe("model config", () => {
  describe("loadModelConfig", () => {
    it("returns the offline model, the default Bedrock model and region, and the default prices when nothing is set", () => {
      expect(loadModelConfig({})).toMatchObject({
        provider: "local",
        bedrockModelId: DEFAULT_BEDROCK_MODEL_ID,
        region: DEFAULT_REGION,
        prices: DEFAULT_MODEL_PRICES,
      });
    });

    it("returns BEDROCK_REGION over AWS_REGION", () => {
      expect(loadModelConfig({ AWS_REGION: "eu-west-1" }).region).toBe("eu-west-1");
      expect(loadModelConfig({ AWS_REGION: "eu-west-1", BEDROCK_REGION: "us-west-2" }).region).toBe("us-west-2");
    });

    it("throws ValidationError naming OPENAI_BASE_URL and OPENAI_MODEL when openai-compatible lacks them", () => {
      expect(() => loadModelConfig({ MODEL_PROVIDER: "openai-compatible", OPENAI_MODEL: "m" })).toThrow(
        expect.objectContaining({ details: [expect.objectContaining({ path: "OPENAI_BASE_URL" })] }),
      );
      expect(() => loadModelConfig({ MODEL_PROVIDER: "openai-compatible", OPENAI_BASE_URL: "http://127.0.0.1:11434/v1" })).toThrow(ValidationError);
    });
  });
});
