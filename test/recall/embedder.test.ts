import { BedrockRuntimeClient } from "@aws-sdk/client-bedrock-runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BedrockEmbedder, cosine, EmbeddingError } from "../../lib/recall/embedder.js";
import { startEmbeddingsEndpoint, TITAN_V2_MODEL_ID, type EmbeddingsEndpoint } from "../support/embeddings-endpoint.js";

let endpoint: EmbeddingsEndpoint;
let client: BedrockRuntimeClient;

beforeAll(async () => {
  endpoint = await startEmbeddingsEndpoint();
  client = new BedrockRuntimeClient({
    endpoint: endpoint.url,
    region: "us-east-1",
    credentials: { accessKeyId: "AKIDLOCALTEST", secretAccessKey: "local-test-secret" },
    maxAttempts: 1,
  });
});
afterAll(async () => {
  client.destroy();
  await endpoint.close();
});

describe("BedrockEmbedder", () => {
  describe("embed", () => {
    it("returns a unit vector of the dimensions asked, through a signed InvokeModel of the model", async () => {
      const vector = await new BedrockEmbedder({ modelId: TITAN_V2_MODEL_ID, client, dimensions: 256 }).embed("the warehouse lease");
      expect(vector).toHaveLength(256);
      expect(Math.hypot(...vector)).toBeCloseTo(1, 5);
      expect(endpoint.requests.at(-1)).toMatchObject({ modelId: TITAN_V2_MODEL_ID, signed: true, inputText: "the warehouse lease", status: 200 });
    });

    it("sends only the first inputChars characters of a long text", async () => {
      await new BedrockEmbedder({ modelId: TITAN_V2_MODEL_ID, client, dimensions: 256, inputChars: 10 }).embed("warehouse lease renewal");
      expect(endpoint.requests.at(-1)?.inputText).toBe("warehouse ");
    });

    it("throws EmbeddingError naming the SDK error, with it as cause, when the model refuses", async () => {
      endpoint.throttleNext(1);
      const error = await new BedrockEmbedder({ modelId: TITAN_V2_MODEL_ID, client, dimensions: 256 }).embed("text").catch((e: unknown) => e);
      expect(error).toBeInstanceOf(EmbeddingError);
      expect(error).toMatchObject({ modelId: TITAN_V2_MODEL_ID, message: "the embeddings model could not be called (ThrottlingException)" });
      expect((error as Error).cause).toMatchObject({ name: "ThrottlingException" });
    });

    it("throws EmbeddingError for an unknown model", async () => {
      await expect(new BedrockEmbedder({ modelId: "amazon.unknown", client }).embed("text")).rejects.toMatchObject({
        name: "EmbeddingError",
        modelId: "amazon.unknown",
      });
    });
  });
});

describe("cosine", () => {
  it("returns 1 for vectors pointing the same way, 0 for orthogonal ones and -1 for opposite ones", () => {
    expect(cosine(Float32Array.of(1, 2), Float32Array.of(2, 4))).toBeCloseTo(1, 6);
    expect(cosine(Float32Array.of(1, 0), Float32Array.of(0, 3))).toBe(0);
    expect(cosine(Float32Array.of(1, 1), Float32Array.of(-1, -1))).toBeCloseTo(-1, 6);
  });

  it("returns 0 for vectors of different lengths or a zero vector", () => {
    expect(cosine(Float32Array.of(1, 0), Float32Array.of(1, 0, 0))).toBe(0);
    expect(cosine(Float32Array.of(0, 0), Float32Array.of(1, 0))).toBe(0);
  });
});
