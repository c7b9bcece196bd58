import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { z } from "zod";
import { WORD_VECTOR_DIMENSIONS, wordVectors } from "./word-vectors.js";

/**
 * A local stand-in for Bedrock Runtime `InvokeModel` with Amazon Titan Text Embeddings V2, spoken over
 * HTTP/2 cleartext as the AWS SDK speaks it. Its vectors come from a real, if small, semantic model:
 * GloVe word vectors (`./word-vectors.ts`) averaged with SIF weights (Arora et al., "A simple but
 * tough-to-beat baseline for sentence embeddings", 2017), rare words counting more than common ones,
 * less the direction that all English text shares. It knows which words mean similar things, not how
 * a sentence's words relate, so it is weaker than Titan: a figure measured with it is a floor for the
 * semantic path, not Titan's. It knows nothing of our index or our tests.
 */

export const TITAN_V2_MODEL_ID = "amazon.titan-embed-text-v2:0";
/** SIF's smoothing constant: a word of frequency p weighs a / (a + p). */
const SIF_A = 1e-3;
/** The most frequent words, whose mean direction is taken out of every embedding (it says "English", not what the text is about). */
const COMMON_WORDS = 10_000;
const STOPWORDS = new Set(
  (
    "a an and are as at be by can did do does for from had has have i in is it its me my of on or our so that the " +
    "their them they this to was we were what when which who will with you your"
  ).split(" "),
);

const requestSchema = z
  .object({
    inputText: z.string().min(1).max(50_000),
    dimensions: z.union([z.literal(256), z.literal(512), z.literal(1024)]).optional(),
    normalize: z.boolean().optional(),
    embeddingTypes: z.array(z.enum(["float", "binary"])).optional(),
  })
  .strict();

let commonDirection: Float32Array | undefined;

function unit(vector: Float32Array): Float32Array {
  const norm = Math.hypot(...vector);
  return norm === 0 ? vector : vector.map((v) => v / norm);
}

/** The unit mean of the most frequent words' vectors. */
function common(): Float32Array {
  if (commonDirection) return commonDirection;
  const { data } = wordVectors();
  const mean = new Float32Array(WORD_VECTOR_DIMENSIONS);
  for (let i = 0; i < COMMON_WORDS * WORD_VECTOR_DIMENSIONS; i++) mean[i % WORD_VECTOR_DIMENSIONS] += data[i];
  commonDirection = unit(mean);
  return commonDirection;
}

/** The stand-in's embedding of a text: unit length, in the first 100 of the requested dimensions (the rest 0, which cosine ignores). */
export function standInEmbedding(text: string, dimensions: number): number[] {
  const { data, rank, words } = wordVectors();
  const sum = new Float32Array(WORD_VECTOR_DIMENSIONS);
  for (const [word] of text.toLowerCase().matchAll(/[a-z]+/g)) {
    const r = rank.get(word);
    if (r === undefined || STOPWORDS.has(word)) continue;
    // Zipf's law: the word of rank r has a frequency of about 1 / (r ln V).
    const weight = SIF_A / (SIF_A + 1 / ((r + 10) * Math.log(words.length)));
    for (let d = 0; d < WORD_VECTOR_DIMENSIONS; d++) sum[d] += weight * data[r * WORD_VECTOR_DIMENSIONS + d];
  }
  const direction = unit(sum);
  const u = common();
  const shared = direction.reduce((dot, v, d) => dot + v * u[d], 0);
  const vector = new Array<number>(dimensions).fill(0);
  unit(direction.map((v, d) => v - shared * u[d])).forEach((v, d) => {
    vector[d] = v;
  });
  return vector;
}

export interface EmbeddingsRequestRecord {
  modelId: string;
  signed: boolean;
  inputText?: string;
  status: number;
}

export interface EmbeddingsEndpoint {
  url: string;
  requests: EmbeddingsRequestRecord[];
  /** Answers the next `count` requests with Bedrock's throttling error (429 `ThrottlingException`). */
  throttleNext(count: number): void;
  close(): Promise<void>;
}

export async function startEmbeddingsEndpoint(): Promise<EmbeddingsEndpoint> {
  // Loaded before the first request: the first load ever (building the cache) takes longer than a request may.
  wordVectors();
  const server = http2.createServer();
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (session) => {
    sessions.add(session);
    session.on("close", () => sessions.delete(session));
  });
  const requests: EmbeddingsRequestRecord[] = [];
  let throttled = 0;

  const send = (stream: http2.ServerHttp2Stream, status: number, body: unknown, errorType?: string) => {
    stream.respond({ ":status": status, "content-type": "application/json", ...(errorType ? { "x-amzn-errortype": errorType } : {}) });
    stream.end(JSON.stringify(body));
  };

  server.on("stream", (stream, headers) => {
    const chunks: Buffer[] = [];
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.on("end", () => {
      const path = String(headers[":path"] ?? "");
      const match = /^\/model\/([^/]+)\/invoke$/.exec(path);
      const modelId = match ? decodeURIComponent(match[1]) : "";
      const record: EmbeddingsRequestRecord = { modelId, signed: String(headers.authorization ?? "").startsWith("AWS4-HMAC-SHA256 "), status: 200 };
      requests.push(record);
      const reject = (status: number, type: string, message: string) => {
        record.status = status;
        send(stream, status, { message }, type);
      };
      if (headers[":method"] !== "POST" || !match) return reject(404, "UnknownOperationException", "unknown operation");
      if (!record.signed) return reject(403, "MissingAuthenticationTokenException", "Missing Authentication Token");
      if (throttled > 0) {
        throttled--;
        return reject(429, "ThrottlingException", "Too many requests, please wait before trying again.");
      }
      if (modelId !== TITAN_V2_MODEL_ID) return reject(400, "ValidationException", "The provided model identifier is invalid.");
      let parsed;
      try {
        parsed = requestSchema.safeParse(JSON.parse(Buffer.concat(chunks).toString("utf8")));
      } catch {
        return reject(400, "ValidationException", "Malformed input request, please reformat your input and try again.");
      }
      if (!parsed.success) return reject(400, "ValidationException", `Malformed input request: ${parsed.error.issues[0]?.message}`);
      record.inputText = parsed.data.inputText;
      const embedding = standInEmbedding(parsed.data.inputText, parsed.data.dimensions ?? 1024);
      send(stream, 200, { embedding, inputTextTokenCount: parsed.data.inputText.split(/\s+/).length });
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    throttleNext(count) {
      throttled = count;
    },
    close() {
      // The SDK keeps its HTTP/2 sessions open for reuse; close would wait for them forever.
      for (const session of sessions) session.destroy();
      return new Promise((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
    },
  };
}
