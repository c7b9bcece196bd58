import type { TiktokenBPE } from "js-tiktoken/lite";

/**
 * Counts tokens exactly as a tiktoken encoder does (pre-tokenizer, then byte-pair merges with the
 * lowest rank first, leftmost first among equal ranks), in time linear in the text up to a log
 * factor. js-tiktoken (and tiktoken itself) find each merge by scanning every pair of a piece, so a
 * long piece costs its length squared times the key size: 8,000 U+3000 ideographic spaces, one
 * piece, took 66 s. Here the pairs wait in a heap, a pair longer than the longest token is never
 * looked up, and a piece of n bytes costs O(n log n). Only counts are needed, so no token ids are
 * kept; test/model-view/token-counter.unit.test.ts compares the counts with a stock encoder.
 */
export type BpeCounter = (text: string) => number;

/** Token bytes as a Latin-1 string (one character per byte): a cheap key that `slice` yields directly. */
function byteKeys(bpeRanks: string): { ranks: Map<string, number>; maxTokenBytes: number } {
  const ranks = new Map<string, number>();
  let maxTokenBytes = 1;
  // One line per run of consecutive ranks: "<unused> <first rank> <base64 token>...".
  for (const line of bpeRanks.split("\n")) {
    if (line.length === 0) continue;
    const fields = line.split(" ");
    const first = Number.parseInt(fields[1], 10);
    for (let i = 2; i < fields.length; i++) {
      const key = Buffer.from(fields[i], "base64").toString("latin1");
      ranks.set(key, first + i - 2);
      if (key.length > maxTokenBytes) maxTokenBytes = key.length;
    }
  }
  return { ranks, maxTokenBytes };
}

const NO_PAIR = -1;
// Heap keys pack a pair's rank and its left part's byte offset, so ties go to the leftmost pair.
const OFFSET_SPAN = 2 ** 32;
// biome-ignore lint/suspicious/noControlCharactersInRegex: the range starts at NUL on purpose, every ASCII character is allowed
const NON_ASCII = /[^\x00-\x7f]/;

/** Builds the counter for `ranks` (about 0.1 s for cl100k_base's 100,256 tokens). */
export function createBpeCounter(ranks: TiktokenBPE): BpeCounter {
  const { ranks: rankOf, maxTokenBytes } = byteKeys(ranks.bpe_ranks);
  const pieces = new RegExp(ranks.pat_str, "gu");
  // Scratch arrays reused across pieces (counting is synchronous): for each part's first byte,
  // the next and previous parts' first bytes and the rank of the pair the part starts (NO_PAIR
  // when there is none or the part was merged away).
  let nextStart = new Int32Array(64);
  let previousStart = new Int32Array(64);
  let pairRank = new Int32Array(64);
  const heap: number[] = [];

  const push = (key: number): void => {
    let i = heap.push(key) - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (heap[parent] <= key) break;
      heap[i] = heap[parent];
      i = parent;
    }
    heap[i] = key;
  };
  const pop = (): number => {
    const top = heap[0];
    const last = heap.pop() as number;
    if (heap.length === 0) return top;
    let i = 0;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= heap.length) break;
      if (child + 1 < heap.length && heap[child + 1] < heap[child]) child += 1;
      if (heap[child] >= last) break;
      heap[i] = heap[child];
      i = child;
    }
    heap[i] = last;
    return top;
  };

  /** Ranks the pair starting at part `start` and queues it; `NO_PAIR` when it is no token. */
  const rankPair = (bytes: string, start: number): void => {
    const right = nextStart[start];
    const end = right < bytes.length ? nextStart[right] : -1;
    const rank = end > 0 && end - start <= maxTokenBytes ? (rankOf.get(bytes.slice(start, end)) ?? NO_PAIR) : NO_PAIR;
    pairRank[start] = rank;
    if (rank !== NO_PAIR) push(rank * OFFSET_SPAN + start);
  };

  const pieceTokens = (bytes: string): number => {
    const n = bytes.length;
    if (n <= 1 || rankOf.has(bytes)) return Math.min(n, 1);
    if (nextStart.length <= n) {
      nextStart = new Int32Array(2 * n);
      previousStart = new Int32Array(2 * n);
      pairRank = new Int32Array(2 * n);
    }
    for (let i = 0; i < n; i++) {
      nextStart[i] = i + 1;
      previousStart[i] = i - 1;
    }
    heap.length = 0;
    for (let i = 0; i < n; i++) rankPair(bytes, i);
    let parts = n;
    while (heap.length > 0) {
      const key = pop();
      const start = key % OFFSET_SPAN;
      const rank = (key - start) / OFFSET_SPAN;
      if (pairRank[start] !== rank) continue;
      const right = nextStart[start];
      pairRank[right] = NO_PAIR;
      nextStart[start] = nextStart[right];
      if (nextStart[start] < n) previousStart[nextStart[start]] = start;
      parts -= 1;
      rankPair(bytes, start);
      if (previousStart[start] >= 0) rankPair(bytes, previousStart[start]);
    }
    return parts;
  };

  return (text) => {
    let tokens = 0;
    for (const [piece] of text.matchAll(pieces)) {
      tokens += pieceTokens(NON_ASCII.test(piece) ? Buffer.from(piece, "utf8").toString("latin1") : piece);
    }
    return tokens;
  };
}
