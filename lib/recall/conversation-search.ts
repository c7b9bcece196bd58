import type { StructuredLogger } from "../logger.js";
import { firstKeptTurn } from "../model-view/build-model-view.js";
import type { ModelViewPolicy } from "../model-view/types.js";
import { standingStatement, supersedes } from "../model-view/standing-ledger.js";
import type { RecallEntry, RecallIndexStore, RecallTurnDocument } from "../store/recall-index-store.js";
import { cosine, type Embedder } from "./embedder.js";
import { quotedPhrases, recallTerms } from "./recall-terms.js";
import { recallText } from "./turn-indexer.js";

/** BM25 term-frequency saturation (the usual value). */
export const DEFAULT_BM25_K1 = 1.2;
/** BM25 length normalization (the usual value). */
export const DEFAULT_BM25_B = 0.75;
/**
 * Share of the semantic score in a fused one, the lexical score having the rest. Both are scaled to 0–1
 * over the turns searched first (relative score fusion). Rank fusion was tried and dropped: it ranks a
 * turn that shares only a common word ("month") above the best semantic match, whatever the scores.
 */
export const DEFAULT_SEMANTIC_WEIGHT = 0.8;
/** Query terms considered; a longer query keeps its first ones, so a search stays bounded by its index, not its input. */
export const MAX_QUERY_TERMS = 64;
/** Quoted phrases a query's ranking considers: its first ones, distinct, so a query of many phrases costs no more than one of these. */
export const MAX_QUERY_PHRASES = 8;
/** Later turns whose records are read to find the correction of a stated hit. */
export const MAX_CORRECTION_CANDIDATES = 10;
/** Candidates checked for a quoted phrase, or for a statement the user made about themselves, per result asked for. */
const PHRASE_CANDIDATES_PER_RESULT = 10;
/** A question in the first person ("my region", "the way I like it") points back at something the user said of themselves. */
const FIRST_PERSON = /\b(i|i'm|i've|me|my|mine|our|ours|we|us)\b/iu;

/**
 * Whether a turn's question is the user telling something about themselves ("I look after the West
 * region.", "My manager is Lena Novak."): first person, and not a question.
 */
export function isUserStatement(question: string): boolean {
  const text = question.trim();
  return FIRST_PERSON.test(text) && !text.endsWith("?");
}

export interface ConversationSearchDeps {
  /** What a search reads: the conversation's index entries and the records of its hits. */
  index: Pick<RecallIndexStore, "entries" | "records"> & Partial<Pick<RecallIndexStore, "queryTerms">>;
  /** Without one, search is lexical only. */
  embedder?: Embedder;
  logger?: StructuredLogger;
}

export interface SearchRequest {
  conversationId: string;
  query: string;
  limit: number;
  /** The newest finished turns the model already sees; they are not searched. Ignored with `view`. */
  visibleTurns?: number;
  /**
   * The view's window: every finished turn is searched, since the view shows none whole (a kept turn
   * is its question, answer and digest), and the outcome says which turns the view keeps
   * (`firstInView`, as `firstKeptTurn` computes it), so the search and the view agree on what is in view.
   */
  view?: Pick<ModelViewPolicy, "finishedTurns" | "historyBlockTurns">;
  /**
   * Read this one finished turn (its number, from 1, as the out-of-sight notice lists it) instead of
   * ranking them all: the outcome holds it whatever its score (with its correction, as any stated
   * hit), the query picking the lines of its outputs a hit shows. None when no such turn is indexed.
   */
  turn?: number;
  signal?: AbortSignal;
}

export interface RecallHit {
  record: RecallTurnDocument;
  /** BM25 score; 0 when no query term is in the turn. */
  lexical: number;
  /** Cosine similarity to the query; absent without embeddings. */
  semantic?: number;
  /** Earlier turns with exactly the same text (the same question asked again, the same answer), left out of the hits for this one. */
  repeats?: number[];
}

export interface SearchOutcome {
  /** Best first. */
  hits: RecallHit[];
  /** Finished turns out of sight, all of which were ranked. */
  searchedTurns: number;
  /** Finished turns in the index, seen or not. */
  indexedTurns: number;
  /** With `SearchRequest.turn`: the one turn read. */
  turn?: number;
  /** With `SearchRequest.view`: the turns numbered after this one are in the view (in part); those up to it are out of sight. */
  firstInView?: number;
  ranking: "lexical" | "lexical and semantic";
  /** Set when embeddings are configured but the query could not be embedded. */
  semanticUnavailable?: boolean;
}

/** BM25 over the given entries; only entries that contain a query term get a score. */
export function bm25(entries: readonly RecallEntry[], queryTerms: readonly string[], k1 = DEFAULT_BM25_K1, b = DEFAULT_BM25_B): Map<RecallEntry, number> {
  const scores = new Map<RecallEntry, number>();
  const averageLength = Math.max(1, entries.reduce((sum, e) => sum + e.length, 0) / entries.length);
  for (const term of queryTerms) {
    const containing = entries.filter((e) => e.terms.has(term));
    const idf = Math.log(1 + (entries.length - containing.length + 0.5) / (containing.length + 0.5));
    for (const entry of containing) {
      const tf = entry.terms.get(term) as number;
      const score = (idf * tf * (k1 + 1)) / (tf + k1 * (1 - b + (b * entry.length) / averageLength));
      scores.set(entry, (scores.get(entry) ?? 0) + score);
    }
  }
  return scores;
}

/** Ranks by descending score, newer turns first on ties. */
function ranked(scores: Map<RecallEntry, number>): RecallEntry[] {
  return [...scores].sort((a, b) => b[1] - a[1] || b[0].turnNumber - a[0].turnNumber).map(([entry]) => entry);
}

/** Scores scaled to 0–1 between `low` and the best score (all 0 when nothing is above `low`). */
function scaled(scores: Map<RecallEntry, number>, low: number): Map<RecallEntry, number> {
  let best = low;
  for (const score of scores.values()) best = Math.max(best, score);
  return new Map([...scores].map(([entry, score]) => [entry, best > low ? (score - low) / (best - low) : 0]));
}

const lowest = (scores: Map<RecallEntry, number>) => [...scores.values()].reduce((low, score) => Math.min(low, score), Number.POSITIVE_INFINITY);

/**
 * Relative score fusion: BM25 scaled from 0 (no query term in the turn), cosine from the least similar
 * turn searched (its scale has no natural zero), each to the best turn's.
 */
function fuse(lexical: Map<RecallEntry, number>, semantic: Map<RecallEntry, number>, weight = DEFAULT_SEMANTIC_WEIGHT): RecallEntry[] {
  const fused = new Map<RecallEntry, number>();
  for (const [entry, score] of scaled(semantic, lowest(semantic))) fused.set(entry, weight * score);
  for (const [entry, score] of scaled(lexical, 0)) fused.set(entry, (fused.get(entry) ?? 0) + (1 - weight) * score);
  return ranked(fused);
}

/** An entry's terms and their counts, as one string: two turns with the same key said the same words. */
function contentKey(entry: RecallEntry): string {
  return [...entry.terms]
    .map(([term, count]) => `${term}:${count}`)
    .sort()
    .join(" ");
}

/**
 * The order with each turn whose index entry repeats a better-ranked one's (the same question asked
 * again and answered the same, as a daily check is) left out, among its first `most`; `repeats` gets,
 * for each kept turn, the turn numbers it stands for. A repeated turn adds nothing to a hit and would
 * take the place of a turn that does.
 */
export function withoutRepeats(order: readonly RecallEntry[], most: number, repeats: Map<RecallEntry, number[]>): RecallEntry[] {
  const kept: RecallEntry[] = [];
  const byKey = new Map<string, RecallEntry>();
  for (const [i, entry] of order.entries()) {
    if (i >= most) {
      kept.push(...order.slice(i));
      break;
    }
    const key = `${entry.length}|${contentKey(entry)}`;
    const first = byKey.get(key);
    if (first) repeats.set(first, [...(repeats.get(first) ?? []), entry.turnNumber]);
    else {
      byKey.set(key, entry);
      kept.push(entry);
    }
  }
  return kept;
}

function normalizedText(record: RecallTurnDocument): string {
  return recallText(record).toLowerCase().replace(/\s+/g, " ");
}

/**
 * Searches a conversation's finished turns that are out of the model's sight, in its own index only:
 * BM25 over stemmed terms, fused with embedding similarity when an embeddings model is configured,
 * quoted phrases first. Reads the conversation's index segments and the records of the hits; it never
 * rebuilds the index.
 */
export class ConversationSearch {
  constructor(private readonly deps: ConversationSearchDeps) {}

  async search(request: SearchRequest): Promise<SearchOutcome> {
    const { index } = this.deps;
    // One turn read: it, and the later turn that corrects it when it states a corrected fact.
    const limit = request.turn === undefined ? request.limit : 2;
    const [entries, queryVector] = await Promise.all([index.entries(request.conversationId), this.embedQuery(request)]);
    const newest = entries.reduce((n, e) => Math.max(n, e.turnNumber), 0);
    const firstInView = request.view ? firstKeptTurn(newest, request.view) : undefined;
    const searchable = request.view ? entries : entries.filter((e) => e.turnNumber <= newest - (request.visibleTurns ?? 0));
    const outOfSight = request.turn === undefined ? searchable : searchable.filter((e) => e.turnNumber === request.turn);
    const words = [...new Set(recallTerms(request.query))].slice(0, MAX_QUERY_TERMS);
    // Keyed hashes where the index stores its tenant's terms so (docs/security.md, "Recall over encrypted contents").
    const queryTerms = index.queryTerms ? await index.queryTerms(request.conversationId, words) : words;
    const lexical = bm25(outOfSight, queryTerms);
    const semantic = new Map<RecallEntry, number>();
    if (queryVector) for (const entry of outOfSight) if (entry.vector) semantic.set(entry, cosine(queryVector, entry.vector));
    // A turn read by number is returned whatever its score; a search ranks the turns that score.
    let order = request.turn !== undefined ? outOfSight : queryVector ? fuse(lexical, semantic) : ranked(lexical);
    // Turns out of sight first: the model sees the others in part already, so they only fill the rest.
    if (firstInView !== undefined) order = [...order.filter((e) => e.turnNumber <= firstInView), ...order.filter((e) => e.turnNumber > firstInView)];
    const repeats = new Map<RecallEntry, number[]>();
    order = withoutRepeats(order, limit * PHRASE_CANDIDATES_PER_RESULT, repeats);
    const phrases = [...new Set(quotedPhrases(request.query))].slice(0, MAX_QUERY_PHRASES);
    const firstPerson = FIRST_PERSON.test(request.query);
    const wide = phrases.length > 0 || firstPerson;
    const shortlist = order.slice(0, wide ? limit * PHRASE_CANDIDATES_PER_RESULT : limit);
    const records = new Map(
      (
        await index.records(
          request.conversationId,
          shortlist.map((e) => e.turnId),
        )
      ).map((r) => [r._id, r]),
    );
    // Turns with a quoted phrase first; without phrases nothing matches and the order stays. Each
    // candidate is normalized once and checked once, whatever the number of phrases (at most MAX_QUERY_PHRASES).
    const matching = new Set<RecallEntry>();
    if (phrases.length > 0) {
      for (const entry of shortlist) {
        const record = records.get(entry.turnId);
        if (!record) continue;
        const text = normalizedText(record);
        if (phrases.some((p) => text.includes(p))) matching.add(entry);
      }
    }
    const matches = (e: RecallEntry) => matching.has(e);
    order = [...shortlist.filter(matches), ...shortlist.filter((e) => !matches(e))];
    // Asked in the first person, the user's own statements that share a term with the question come
    // next: "how is my region doing?" means the region they said was theirs, not every turn about regions.
    if (firstPerson) {
      const stated = (e: RecallEntry) => !matches(e) && (lexical.get(e) ?? 0) > 0 && isUserStatement(records.get(e.turnId)?.question ?? "");
      order = [...order.filter(matches), ...order.filter(stated), ...order.filter((e) => !matches(e) && !stated(e))];
    }
    const hits: RecallHit[] = [];
    for (const entry of await this.withCorrections(request.conversationId, order.slice(0, limit), searchable, records)) {
      const record = records.get(entry.turnId);
      if (!record) continue;
      const hit: RecallHit = { record, lexical: lexical.get(entry) ?? 0 };
      const same = repeats.get(entry);
      if (same) hit.repeats = same;
      if (queryVector) hit.semantic = semantic.get(entry);
      hits.push(hit);
    }
    hits.splice(limit);
    return {
      hits,
      searchedTurns: outOfSight.length,
      indexedTurns: entries.length,
      ranking: queryVector ? "lexical and semantic" : "lexical",
      ...(firstInView !== undefined && { firstInView }),
      ...(request.turn !== undefined && { turn: request.turn }),
      ...(this.deps.embedder && !queryVector ? { semanticUnavailable: true } : {}),
    };
  }

  /**
   * The hits with each standing statement the user later corrected preceded by its correction (the
   * latest later statement that supersedes it, `supersedes`), so a corrected fact is never returned
   * without its correction; the caller cuts the list back to its length. Reads the records of at most
   * `MAX_CORRECTION_CANDIDATES` later turns that share a term with a stated hit.
   */
  private async withCorrections(
    conversationId: string,
    top: readonly RecallEntry[],
    searched: readonly RecallEntry[],
    records: Map<string, RecallTurnDocument>,
  ): Promise<RecallEntry[]> {
    const out: RecallEntry[] = [];
    for (const entry of top) {
      const stated = standingStatement(records.get(entry.turnId)?.question ?? "");
      if (stated) {
        const candidates = searched
          .filter((e) => e.turnNumber > entry.turnNumber && [...e.terms.keys()].some((t) => entry.terms.has(t)))
          .sort((a, b) => b.turnNumber - a.turnNumber)
          .slice(0, MAX_CORRECTION_CANDIDATES);
        const missing = candidates.filter((e) => !records.has(e.turnId)).map((e) => e.turnId);
        if (missing.length > 0) for (const r of await this.deps.index.records(conversationId, missing)) records.set(r._id, r);
        const correction = candidates.find((e) => {
          const later = standingStatement(records.get(e.turnId)?.question ?? "");
          return later !== undefined && supersedes(later, stated);
        });
        if (correction && !out.includes(correction)) out.push(correction);
      }
      if (!out.includes(entry)) out.push(entry);
    }
    // A correction comes before what it corrects: cutting the list to its length drops the stale statement first.
    return out;
  }

  private async embedQuery(request: SearchRequest): Promise<Float32Array | undefined> {
    const { embedder, logger } = this.deps;
    if (!embedder) return undefined;
    try {
      return await embedder.embed(request.query, request.signal);
    } catch (error) {
      logger?.warn("recall query embedding failed", {
        conversationId: request.conversationId,
        modelId: embedder.modelId,
        error: error instanceof Error ? error.name : "Error",
      });
      return undefined;
    }
  }
}
