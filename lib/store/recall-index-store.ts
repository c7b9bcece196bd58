import { Binary, MongoServerError, type Collection, type Db } from "mongodb";
import { CLEAR_FIELDS } from "../crypto/clear-field-cipher.js";
import type { ContentCipher, FieldRef } from "../crypto/content-cipher.js";
import { COLLECTIONS } from "./collections.js";
import type { WriteFence } from "./write-fence.js";
import type { Provenance } from "../auth/data-visibility.js";

/** Turns per index segment: a search at 200 turns reads two documents, and a segment stays far below 16 MB. */
export const DEFAULT_RECALL_SEGMENT_TURNS = 100;

const DUPLICATE_KEY = 11000;

/** A tool call of a finished turn, as search shows it: the name, its arguments and the start of its output. */
export interface RecallToolOutput {
  name: string;
  args: string;
  preview: string;
  /** The rest of the output after the preview, in bounded chunks (`outputChunks`); absent in records written before. */
  chunks?: string[];
  /** What a searcher needs to see this call and its output (`lib/auth/data-visibility.ts`), beside them; absent in records written before. */
  provenance?: Provenance;
}

/** What search returns of a finished turn: its number in the conversation, when it was asked, and its text. */
export interface RecallTurnDocument {
  /** The turn id. */
  _id: string;
  conversationId: string;
  /** 1-based position of the turn in the conversation. */
  turnNumber: number;
  /** When the question was asked. */
  at: Date;
  status: "completed" | "failed";
  question: string;
  /** Empty for a failed turn. */
  answer: string;
  tools: RecallToolOutput[];
  expiresAt?: Date;
}

/** One turn's entry in the index: its term frequencies, its length in terms, and its embedding when one was made. */
export interface RecallEntry {
  turnId: string;
  turnNumber: number;
  at: Date;
  length: number;
  terms: Map<string, number>;
  vector?: Float32Array;
}

/**
 * Entries of one segment of `segmentTurns` turns, packed: one tab-separated line per turn (number,
 * time, length, `term:count` pairs) and one vector per turn (empty when the turn has no embedding).
 * A segment still open is one document per turn (`${conversationId}:${segment}:${turnId}`); a
 * complete one is one document (`${conversationId}:${segment}`). Each is written once (a removal
 * aside), so a turn writes only its own entry, and a search reads one document per hundred turns.
 */
interface RecallSegmentDocument {
  /** `${conversationId}:${segment}` */
  _id: string;
  conversationId: string;
  segment: number;
  turnIds: string[];
  entries: string[];
  vectors: Binary[];
  lastTurnNumber: number;
  lastAt: Date;
  expiresAt?: Date;
  /** Its terms are keyed hashes (`TenantTermKeys`), not words; absent on segments written in clear. */
  keyed?: boolean;
}

/** Where indexing left off: the newest indexed turn, and the ids of its segment (asked in the same millisecond is not asked twice). */
export interface RecallWatermark {
  turnNumber: number;
  at: Date;
  recentTurnIds: ReadonlySet<string>;
}

export interface RecallIndexStoreOptions {
  /** Default: {@link DEFAULT_RECALL_SEGMENT_TURNS}. */
  segmentTurns?: number;
  /** Default: records stored clear (`CLEAR_FIELDS`). A record's `question`, `answer` and `tools` are encrypted. */
  cipher?: ContentCipher;
  /** The conversation's term hasher (its tenant's keyed hash); default none, terms stored as words. */
  termHasher?: (conversationId: string) => Promise<(term: string) => string>;
}

/** The record fields encrypted, and how. */
const RECORD_FIELDS = { question: "text", answer: "text", tools: "json" } as const;
const recordRef = (turnId: string, field: keyof typeof RECORD_FIELDS): FieldRef => ({ collection: COLLECTIONS.recallTurns, id: turnId, field });

function hashedTerms(terms: Map<string, number>, hash: (term: string) => string): Map<string, number> {
  const out = new Map<string, number>();
  for (const [term, count] of terms) {
    const key = hash(term);
    out.set(key, (out.get(key) ?? 0) + count);
  }
  return out;
}

function encodeEntry(entry: Omit<RecallEntry, "turnId" | "vector">): string {
  const terms = [...entry.terms].map(([term, count]) => `${term}:${count}`).join(" ");
  return `${entry.turnNumber}\t${entry.at.getTime()}\t${entry.length}\t${terms}`;
}

/**
 * A vector as BSON's int8 vector (subtype 9), scaled so its largest component is ±127: a quarter of
 * float32's bytes, which is most of what a search reads, and cosine ignores the scale.
 */
function encodeVector(vector: Float32Array | undefined): Binary {
  if (!vector) return new Binary(Buffer.alloc(0));
  const largest = vector.reduce((max, v) => Math.max(max, Math.abs(v)), 0);
  const scale = largest === 0 ? 0 : 127 / largest;
  return Binary.fromInt8Array(Int8Array.from(vector, (v) => Math.round(v * scale)));
}

function decodeVector(binary: Binary | undefined): Float32Array | undefined {
  if (!binary || binary.length() === 0) return undefined;
  if (binary.sub_type === Binary.SUBTYPE_VECTOR) return Float32Array.from(binary.toInt8Array());
  // Written as raw float32 before int8 vectors. Copied: a Float32Array needs 4-byte alignment, which a slice of a BSON buffer does not promise.
  const bytes = binary.buffer;
  return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
}

function decodeEntry(line: string, turnId: string, vector: Binary | undefined): RecallEntry {
  const [turnNumber, at, length, pairs] = line.split("\t");
  const terms = new Map<string, number>();
  for (const pair of pairs ? pairs.split(" ") : []) {
    const colon = pair.lastIndexOf(":");
    terms.set(pair.slice(0, colon), Number(pair.slice(colon + 1)));
  }
  const entry: RecallEntry = { turnId, turnNumber: Number(turnNumber), at: new Date(Number(at)), length: Number(length), terms };
  const decoded = decodeVector(vector);
  if (decoded) entry.vector = decoded;
  return entry;
}

/**
 * The recall index of each conversation: `recall_turns` holds one document per finished turn (what a
 * search returns), `recall_index` the segments a search ranks (terms and embeddings). Both are keyed by
 * conversation, deleted with it and expired with it (`RetentionPolicy`).
 */
export class RecallIndexStore {
  readonly turns: Collection<RecallTurnDocument>;
  readonly segments: Collection<RecallSegmentDocument>;
  readonly segmentTurns: number;
  private readonly recordCipher: ContentCipher;
  private readonly termHasher: ((conversationId: string) => Promise<(term: string) => string>) | undefined;

  constructor(db: Db, options: RecallIndexStoreOptions = {}) {
    this.turns = db.collection<RecallTurnDocument>(COLLECTIONS.recallTurns);
    this.segments = db.collection<RecallSegmentDocument>(COLLECTIONS.recallIndex);
    this.segmentTurns = options.segmentTurns ?? DEFAULT_RECALL_SEGMENT_TURNS;
    this.recordCipher = options.cipher ?? CLEAR_FIELDS;
    this.termHasher = options.termHasher;
  }

  /** A search's terms as the conversation's index stores them (keyed hashes when its tenant's terms are keyed). */
  async queryTerms(conversationId: string, terms: readonly string[]): Promise<string[]> {
    if (!this.termHasher) return [...terms];
    const hash = await this.termHasher(conversationId);
    return terms.map(hash);
  }

  private async sealRecord(record: RecallTurnDocument): Promise<RecallTurnDocument> {
    const c = this.recordCipher;
    const id = record.conversationId;
    return {
      ...record,
      question: (await c.sealText(id, recordRef(record._id, "question"), record.question)) as string,
      answer: (await c.sealText(id, recordRef(record._id, "answer"), record.answer)) as string,
      tools: (await c.sealJson(id, recordRef(record._id, "tools"), record.tools)) as RecallToolOutput[],
    };
  }

  private async openRecord(record: RecallTurnDocument): Promise<RecallTurnDocument> {
    const c = this.recordCipher;
    const id = record.conversationId;
    return {
      ...record,
      question: await c.openText(id, recordRef(record._id, "question"), record.question),
      answer: await c.openText(id, recordRef(record._id, "answer"), record.answer),
      tools: await c.openJson<RecallToolOutput[]>(id, recordRef(record._id, "tools"), record.tools),
    };
  }

  async setup(): Promise<void> {
    await this.turns.createIndex({ conversationId: 1, turnNumber: 1 }, { name: "conversation_turns" });
    await this.segments.createIndex({ conversationId: 1, segment: 1 }, { name: "conversation_segments" });
  }

  async watermark(conversationId: string): Promise<RecallWatermark | undefined> {
    const last = await this.segments
      .find({ conversationId }, { projection: { segment: 1 } })
      .sort({ segment: -1 })
      .limit(1)
      .next();
    if (!last) return undefined;
    const docs = await this.segments.find({ conversationId, segment: last.segment }, { projection: { turnIds: 1, lastTurnNumber: 1, lastAt: 1 } }).toArray();
    let turnNumber = 0;
    let at = new Date(0);
    for (const doc of docs) {
      turnNumber = Math.max(turnNumber, doc.lastTurnNumber);
      if (doc.lastAt > at) at = doc.lastAt;
    }
    return { turnNumber, at, recentTurnIds: new Set(docs.flatMap((d) => d.turnIds)) };
  }

  /**
   * Adds a finished turn: its record, then its entry, as a document of its own written once
   * (`${conversationId}:${segment}:${turnId}`). The turn that completes a segment (its number a
   * multiple of `segmentTurns`) packs the segment's entries into one document, written once
   * (`${conversationId}:${segment}`), and removes the single ones: what a turn writes does not grow
   * with the conversation, and a search reads one document per finished segment plus the open
   * segment's entries. Idempotent per turn: an entry already there (a retried hook) is not added
   * again. Written under the turn's fence, with its expiry: once the conversation is deleted or
   * taken over, each write is taken back.
   * @throws StaleWriterError when the fence was lost.
   */
  async add(record: RecallTurnDocument, entry: Pick<RecallEntry, "length" | "terms" | "vector">, fence: WriteFence): Promise<void> {
    const stored = await this.turns.findOne({ _id: record._id });
    const withExpiry = { ...(await this.sealRecord(record)), expiresAt: stored?.expiresAt ?? fence.expiresAt };
    await fence.guard(
      () => this.turns.replaceOne({ _id: record._id }, withExpiry, { upsert: true }),
      () => (stored ? this.turns.replaceOne({ _id: record._id }, stored) : this.turns.deleteOne({ _id: record._id })),
    );
    const { conversationId } = record;
    const hash = this.termHasher && (await this.termHasher(conversationId));
    const terms = hash ? hashedTerms(entry.terms, hash) : entry.terms;
    const segment = Math.floor((record.turnNumber - 1) / this.segmentTurns);
    const already = await this.segments.findOne({ conversationId, segment, turnIds: record._id }, { projection: { _id: 1 } });
    if (already) return;
    const single: RecallSegmentDocument = {
      _id: `${conversationId}:${segment}:${record._id}`,
      conversationId,
      segment,
      turnIds: [record._id],
      entries: [encodeEntry({ turnNumber: record.turnNumber, at: record.at, length: entry.length, terms })],
      vectors: [encodeVector(entry.vector)],
      lastTurnNumber: record.turnNumber,
      lastAt: record.at,
      expiresAt: fence.expiresAt,
      ...(hash && { keyed: true }),
    };
    try {
      await fence.guard(
        () => this.segments.insertOne(single),
        () => this.segments.deleteOne({ _id: single._id }),
      );
    } catch (error) {
      // Added meanwhile by a retried hook: the entry is there.
      if (!(error instanceof MongoServerError && error.code === DUPLICATE_KEY)) throw error;
    }
    if (record.turnNumber % this.segmentTurns === 0) await this.seal(conversationId, segment, fence);
  }

  /**
   * Packs a complete segment's entries into one document (keeping a segment written whole by earlier
   * releases, whose entries come first), then removes the single entries it packed. A crash between
   * the two leaves both, which {@link entries} reads once.
   */
  private async seal(conversationId: string, segment: number, fence: WriteFence): Promise<void> {
    const _id = `${conversationId}:${segment}`;
    const docs = await this.segments.find({ conversationId, segment }).sort({ lastTurnNumber: 1 }).toArray();
    const previous = docs.find((d) => d._id === _id);
    const singles = docs.filter((d) => d._id !== _id);
    if (singles.length === 0) return;
    const parts = previous ? [previous, ...singles] : singles;
    const sealed: RecallSegmentDocument = {
      _id,
      conversationId,
      segment,
      turnIds: parts.flatMap((d) => d.turnIds),
      entries: parts.flatMap((d) => d.entries),
      vectors: parts.flatMap((d) => d.vectors),
      lastTurnNumber: Math.max(...parts.map((d) => d.lastTurnNumber)),
      lastAt: new Date(Math.max(...parts.map((d) => d.lastAt.getTime()))),
      expiresAt: parts[0].expiresAt ?? fence.expiresAt,
      ...(parts.every((d) => d.keyed) && { keyed: true }),
    };
    await fence.guard(
      () => this.segments.replaceOne({ _id }, sealed, { upsert: true }),
      () => (previous ? this.segments.replaceOne({ _id }, previous) : this.segments.deleteOne({ _id })),
    );
    await fence.guard(
      () => this.segments.deleteMany({ _id: { $in: singles.map((d) => d._id) } }),
      () => this.segments.insertMany(singles).catch(() => undefined),
    );
  }

  /**
   * Removes these turns from the conversation's index (their records and their entries), so no
   * search finds them again; returns how many entries it removed. A segment keeps its watermark
   * (`lastTurnNumber`, `lastAt`), so numbering goes on after a removed turn. Under the fence: once
   * it is lost, each write is taken back.
   * @throws StaleWriterError when the fence was lost.
   */
  async remove(conversationId: string, turnIds: readonly string[], fence: WriteFence): Promise<number> {
    if (turnIds.length === 0) return 0;
    const gone = new Set(turnIds);
    let removed = 0;
    const segments = await this.segments.find({ conversationId, turnIds: { $in: [...gone] } }).toArray();
    for (const current of segments) {
      const keep = current.turnIds.map((id, i) => (gone.has(id) ? -1 : i)).filter((i) => i >= 0);
      const next: RecallSegmentDocument = {
        ...current,
        turnIds: keep.map((i) => current.turnIds[i]),
        entries: keep.map((i) => current.entries[i]),
        vectors: keep.map((i) => current.vectors[i]),
      };
      const result = await fence.guard(
        () => this.segments.replaceOne({ _id: current._id, turnIds: { $size: current.turnIds.length } }, next),
        (replaced) =>
          replaced.matchedCount === 1 ? this.segments.replaceOne({ _id: current._id, turnIds: { $size: next.turnIds.length } }, current) : Promise.resolve(),
      );
      // A segment written meanwhile (a turn added) keeps the entry until the next removal, which finds it again.
      if (result.matchedCount === 1) removed += current.turnIds.length - next.turnIds.length;
    }
    const records = await this.turns.find({ conversationId, _id: { $in: [...gone] } }).toArray();
    if (records.length > 0) {
      await fence.guard(
        () => this.turns.deleteMany({ conversationId, _id: { $in: records.map((r) => r._id) } }),
        () => this.turns.insertMany(records).catch(() => undefined),
      );
    }
    return removed;
  }

  /** Every entry of the conversation, oldest first. */
  async entries(conversationId: string): Promise<RecallEntry[]> {
    const segments = await this.segments.find({ conversationId }).sort({ segment: 1, lastTurnNumber: 1 }).toArray();
    // A segment written in clear before its tenant's terms were keyed is hashed as it is read (set-up rewrites it).
    const hash = this.termHasher && segments.some((s) => !s.keyed) ? await this.termHasher(conversationId) : undefined;
    const seen = new Set<string>();
    const entries: RecallEntry[] = [];
    for (const s of segments) {
      s.entries.forEach((line, i) => {
        // Packed and still single after a crash between the two writes of sealing: read once.
        if (seen.has(s.turnIds[i])) return;
        seen.add(s.turnIds[i]);
        const entry = decodeEntry(line, s.turnIds[i], s.vectors[i]);
        entries.push(hash && !s.keyed ? { ...entry, terms: hashedTerms(entry.terms, hash) } : entry);
      });
    }
    return entries.sort((a, b) => a.turnNumber - b.turnNumber);
  }

  /** The records of these turns, only if they belong to the conversation. */
  async records(conversationId: string, turnIds: readonly string[]): Promise<RecallTurnDocument[]> {
    const records = await this.turns.find({ conversationId, _id: { $in: [...turnIds] } }).toArray();
    return Promise.all(records.map((r) => this.openRecord(r)));
  }

  /**
   * Rewrites the segments written in clear with keyed terms (`keyed`): what set-up runs once encryption
   * is on. Returns the segments rewritten; a conversation that is gone is left for retention.
   */
  async keyStoredTerms(): Promise<number> {
    if (!this.termHasher) return 0;
    let rewritten = 0;
    for await (const s of this.segments.find({ keyed: { $ne: true } })) {
      let hash: (term: string) => string;
      try {
        hash = await this.termHasher(s.conversationId);
      } catch {
        continue;
      }
      const entries = s.entries.map((line, i) => {
        const entry = decodeEntry(line, s.turnIds[i], undefined);
        return encodeEntry({ ...entry, terms: hashedTerms(entry.terms, hash) });
      });
      const result = await this.segments.updateOne({ _id: s._id, keyed: { $ne: true }, entries: s.entries }, { $set: { entries, keyed: true } });
      rewritten += result.modifiedCount;
    }
    return rewritten;
  }

  async deleteByConversation(conversationId: string): Promise<void> {
    await Promise.all([this.turns.deleteMany({ conversationId }), this.segments.deleteMany({ conversationId })]);
  }
}
