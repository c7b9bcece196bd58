import { describe, expect, it } from "vitest";
import { DEFAULT_EMBEDDING_DIMENSIONS, DEFAULT_RECALL_MAX_TOKENS, loadRecallConfig } from "../../lib/config/recall-config.js";
import { ValidationError } from "../../lib/errors.js";

describe("loadRecallConfig", () => {
  it("returns lexical search only, with the default dimensions and ceiling, when nothing is set", () => {
    expect(loadRecallConfig({})).toEqual({
      embeddingsModelId: undefined,
      embeddingsRegion: undefined,
      embeddingDimensions: DEFAULT_EMBEDDING_DIMENSIONS,
      maxTokens: DEFAULT_RECALL_MAX_TOKENS,
    });
  });

  it("returns the embeddings region set, else the chat model's, else AWS_REGION", () => {
    const model = { RECALL_EMBEDDINGS_MODEL_ID: "amazon.titan-embed-text-v2:0" };
    expect(loadRecallConfig({ ...model, RECALL_EMBEDDINGS_REGION: "eu-west-1", BEDROCK_REGION: "us-east-1" }).embeddingsRegion).toBe("eu-west-1");
    expect(loadRecallConfig({ ...model, BEDROCK_REGION: "us-east-1", AWS_REGION: "us-west-2" }).embeddingsRegion).toBe("us-east-1");
    expect(loadRecallConfig({ ...model, AWS_REGION: "us-west-2" }).embeddingsRegion).toBe("us-west-2");
  });

  it("returns the dimensions as a number and the ceiling given", () => {
    expect(loadRecallConfig({ RECALL_EMBEDDING_DIMENSIONS: "1024", RECALL_MAX_TOKENS: "800" })).toMatchObject({ embeddingDimensions: 1024, maxTokens: 800 });
  });

  it("throws ValidationError naming the setting for dimensions Titan does not offer or a ceiling outside 200–1,500", () => {
    for (const env of [{ RECALL_EMBEDDING_DIMENSIONS: "768" }, { RECALL_MAX_TOKENS: "199" }, { RECALL_MAX_TOKENS: "1501" }]) {
      const error = (() => {
        try {
          loadRecallConfig(env);
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).details?.map((d) => d.path)).toEqual(Object.keys(env));
    }
  });
});
