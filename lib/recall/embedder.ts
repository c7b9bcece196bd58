import type { BedrockRuntimeClient } from "@aws-sdk/client-bedrock-runtime";
import { z } from "zod";
import { DEFAULT_EMBEDDING_DIMENSIONS } from "../config/recall-config.js";
import { ThreadwiseError } from "../errors.js";

/** Loaded on the first embedding, not at start-up, so a cold start that never embeds does not load it. */
let bedrockRuntimeSdk: Promise<typeof import("@aws-sdk/client-bedrock-runtime")> | undefined;
const loadBedrockRuntimeSdk = () => (bedrockRuntimeSdk ??= import("@aws-sdk/client-bedrock-runtime"));

export { DEFAULT_EMBEDDING_DIMENSIONS };
/** Characters of a text sent to be embedded (Titan V2 takes up to 50,000 characters and 8,192 tokens). */
export const DEFAULT_EMBEDDING_INPUT_CHARS = 20_000;

/** The embeddings model could not embed a text; search then ranks lexically and says so. */
export class EmbeddingError extends ThreadwiseError {
  override name = "EmbeddingError";
  constructor(
    message: string,
    readonly modelId: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** Turns text into a unit vector; texts whose vectors point the same way mean similar things. */
export interface Embedder {
  readonly modelId: string;
  embed(text: string, signal?: AbortSignal): Promise<Float32Array>;
}

export interface BedrockEmbedderOptions {
  /** e.g. `amazon.titan-embed-text-v2:0`. */
  modelId: string;
  /** Region of the client created on first use. */
  region?: string;
  /** Default: one client, created on the first embedding. */
  client?: BedrockRuntimeClient;
  /** Default: {@link DEFAULT_EMBEDDING_DIMENSIONS}. */
  dimensions?: number;
  /** Default: {@link DEFAULT_EMBEDDING_INPUT_CHARS}. */
  inputChars?: number;
}

const titanResponseSchema = z.object({ embedding: z.array(z.number()) });

/** Amazon Titan Text Embeddings V2 through Bedrock Runtime `InvokeModel`, normalized to unit length by the model. */
export class BedrockEmbedder implements Embedder {
  readonly modelId: string;
  readonly #o: BedrockEmbedderOptions;
  readonly #dimensions: number;
  #client: BedrockRuntimeClient | undefined;

  constructor(options: BedrockEmbedderOptions) {
    this.modelId = options.modelId;
    this.#o = options;
    this.#dimensions = options.dimensions ?? DEFAULT_EMBEDDING_DIMENSIONS;
    this.#client = options.client;
  }

  async embed(text: string, signal?: AbortSignal): Promise<Float32Array> {
    const { BedrockRuntimeClient, InvokeModelCommand } = await loadBedrockRuntimeSdk();
    const client = (this.#client ??= new BedrockRuntimeClient({ region: this.#o.region }));
    const inputText = text.slice(0, this.#o.inputChars ?? DEFAULT_EMBEDDING_INPUT_CHARS);
    let body: unknown;
    try {
      const response = await client.send(
        new InvokeModelCommand({
          modelId: this.modelId,
          contentType: "application/json",
          accept: "application/json",
          body: JSON.stringify({ inputText, dimensions: this.#dimensions, normalize: true }),
        }),
        { abortSignal: signal },
      );
      body = JSON.parse(new TextDecoder().decode(response.body));
    } catch (error) {
      const name = error instanceof Error ? error.name : "Error";
      throw new EmbeddingError(`the embeddings model could not be called (${name})`, this.modelId, { cause: error });
    }
    const parsed = titanResponseSchema.safeParse(body);
    if (!parsed.success || parsed.data.embedding.length !== this.#dimensions) {
      throw new EmbeddingError(`the embeddings model answered without a ${this.#dimensions}-dimension embedding`, this.modelId);
    }
    return Float32Array.from(parsed.data.embedding);
  }
}

/** Cosine similarity; 0 for vectors of different models (lengths) or a zero vector. */
export function cosine(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) return 0;
  let dot = 0;
  let aa = 0;
  let bb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  return aa === 0 || bb === 0 ? 0 : dot / Math.sqrt(aa * bb);
}
