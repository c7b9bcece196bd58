import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Database } from "@sqlite.org/sqlite-wasm";
import { loadSqlite } from "../sql/sqlite-wasm.js";
import { z } from "zod";
import { DEFAULT_DOCUMENT_ACCESS_KEYS, EVERYONE, type DocumentAccessKeys } from "./document-access.js";
import type { DocumentRetriever, Passage, SearchOptions } from "./document-retriever.js";

/** The bundled handbook of the sample company. */
export const DEFAULT_CORPUS_DIR = fileURLToPath(new URL("./corpus/", import.meta.url));
/** Passages longer than this many characters are split at paragraph boundaries. */
export const DEFAULT_MAX_PASSAGE_CHARS = 1_200;

interface Section {
  source: string;
  /** The document's metadata attributes (its sidecar's `metadataAttributes`); empty without a sidecar. */
  metadata: Record<string, unknown>;
  title: string;
  heading: string;
  text: string;
}

/** Splits a markdown document into passages: one per `##` section, long ones by paragraph. */
function sections(source: string, metadata: Record<string, unknown>, markdown: string, maxChars: number): Section[] {
  const title = /^#\s+(.+)$/m.exec(markdown)?.[1]?.trim() ?? source;
  const out: Section[] = [];
  let heading = "";
  let buffer: string[] = [];
  const flush = () => {
    const paragraphs = buffer
      .join("\n")
      .split(/\n\s*\n/)
      .map((p) => p.trim())
      .filter(Boolean);
    let current = "";
    for (const p of paragraphs) {
      if (current && current.length + p.length + 2 > maxChars) {
        out.push({ source, metadata, title, heading, text: current });
        current = "";
      }
      current = current ? `${current}\n\n${p}` : p;
    }
    if (current) out.push({ source, metadata, title, heading, text: current });
    buffer = [];
  };
  for (const line of markdown.split("\n")) {
    if (/^#\s/.test(line)) continue;
    const h = /^##+\s+(.+)$/.exec(line);
    if (h) {
      flush();
      heading = h[1]!.trim();
    } else {
      buffer.push(line);
    }
  }
  flush();
  return out;
}

/** Question words and glue that would otherwise match every passage containing "how" or "the". */
const STOP_WORDS = new Set(
  (
    "a an and are as at be by can did do does for from had has have how i in is it its me of on or our should " +
    "that the their there these this to was we were what when where which who whom why will with you your"
  ).split(" "),
);

/** A few words of business questions, matched with the words reports use for them. */
const EXPANSIONS: Record<string, string[]> = {
  fall: ["fell", "drop", "decline"],
  fell: ["fall", "drop", "decline"],
  drop: ["fell", "fall", "decline"],
  decline: ["fell", "fall", "drop"],
  why: ["driver", "reason"],
  rise: ["rose", "increase"],
  rose: ["rise", "increase"],
  increase: ["rose", "rise"],
};

/**
 * Turns free text into an FTS5 query: every word becomes a quoted term, joined by OR, so that
 * the user's punctuation can never be read as FTS5 syntax and bm25 ranks passages by how many
 * and how rare the matching words are.
 */
function toFtsQuery(text: string): string | undefined {
  const words = (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).flatMap((w) => [w, ...(EXPANSIONS[w] ?? [])]);
  const unique = [...new Set(words.filter((w) => w.length > 1 && !STOP_WORDS.has(w)))];
  return unique.length === 0 ? undefined : unique.map((w) => `"${w}"`).join(" OR ");
}

/** A Bedrock knowledge base's metadata sidecar (`<file>.metadata.json`): attributes as strings, numbers, booleans or lists of strings. */
const sidecarSchema = z.object({
  metadataAttributes: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.array(z.string())])),
});

/** The metadata attributes of `<dir>/<file>`, from `<file>.metadata.json` as Bedrock knowledge bases read them; none without one. */
function metadataOf(dir: string, file: string): Record<string, unknown> {
  const path = join(dir, `${file}.metadata.json`);
  if (!existsSync(path)) return {};
  const parsed = sidecarSchema.safeParse(JSON.parse(readFileSync(path, "utf8")));
  if (!parsed.success) throw new Error(`invalid metadata sidecar ${file}.metadata.json: ${parsed.error.issues[0]?.message}`);
  return parsed.data.metadataAttributes;
}

/** A passage with its document's metadata, as a retrieval service that filters on its own sees it. */
export interface RankedPassage extends Passage {
  metadata: Record<string, unknown>;
}

export interface LocalDocumentIndexOptions {
  /** Directory of `.md` files, each with an optional `<file>.metadata.json` sidecar. Default: `DEFAULT_CORPUS_DIR`. */
  corpusDir?: string;
  /** The metadata keys that say who may read a document. Default: `DEFAULT_DOCUMENT_ACCESS_KEYS`. */
  accessKeys?: DocumentAccessKeys;
  /** Default: `DEFAULT_MAX_PASSAGE_CHARS`. */
  maxPassageChars?: number;
}

/** bm25 weights per column: source, tenants, groups, metadata (unindexed), title, heading, text. */
const RANK = "bm25(passages, 0, 0, 0, 0, 2.0, 3.0, 1.0)";
/** A list column holds `*` or one of the audience's values (`?`, a JSON array). */
const LIST_HOLDS = (column: string) => `EXISTS (SELECT 1 FROM json_each(${column}) AS d WHERE d.value IN (SELECT value FROM json_each(?)))`;
/** The best passages among those the audience may read: the filter is part of the query, so LIMIT counts readable passages only. */
const SEARCH_SQL =
  `SELECT source, title, heading, text, ${RANK} AS rank FROM passages ` +
  `WHERE passages MATCH ? AND ${LIST_HOLDS("tenants")} AND ${LIST_HOLDS("groups")} ORDER BY rank LIMIT ?`;
const RANK_ALL_SQL = `SELECT source, title, heading, text, metadata, ${RANK} AS rank FROM passages WHERE passages MATCH ? ORDER BY rank LIMIT ?`;

interface PassageRow {
  source: string;
  title: string;
  heading: string;
  text: string;
  rank: number;
}

function toPassage(r: PassageRow): Passage {
  return {
    source: r.source,
    title: r.title,
    heading: r.heading || undefined,
    text: r.text,
    // bm25 is lower-is-better and negative; flip it so that higher is better, as for Bedrock.
    score: Number((-r.rank).toFixed(3)),
  };
}

interface Index {
  db: Database;
  passageCount: number;
}

/**
 * Full-text search over a folder of markdown documents: an in-memory SQLite FTS5 index (porter
 * stemming), ranked with bm25, headings weighted above body text. Built on the first search (or
 * `passageCount()`), so a deployment that never searches never loads SQLite. Each document's
 * metadata sidecar says who may read it, as a knowledge base's does: a search finds only passages
 * whose tenants and groups lists hold `*` or the audience's own (`document-access.ts`), and a
 * document without a sidecar is found by no one.
 */
export class LocalDocumentIndex implements DocumentRetriever {
  readonly #corpusDir: string;
  readonly #maxChars: number;
  readonly #keys: DocumentAccessKeys;
  #index: Promise<Index> | undefined;

  constructor(options: LocalDocumentIndexOptions = {}) {
    this.#corpusDir = options.corpusDir ?? DEFAULT_CORPUS_DIR;
    this.#maxChars = options.maxPassageChars ?? DEFAULT_MAX_PASSAGE_CHARS;
    this.#keys = options.accessKeys ?? DEFAULT_DOCUMENT_ACCESS_KEYS;
  }

  /** Passages in the index (building it if no search has yet). */
  async passageCount(): Promise<number> {
    return (await this.#open()).passageCount;
  }

  async search(query: string, maxResults: number, { audience }: SearchOptions): Promise<Passage[]> {
    const fts = toFtsQuery(query);
    if (!fts) return [];
    const { db } = await this.#open();
    const tenants = JSON.stringify([EVERYONE, ...(audience.tenant === null ? [] : [audience.tenant])]);
    const groups = JSON.stringify([EVERYONE, ...audience.groups]);
    return (db.selectObjects(SEARCH_SQL, [fts, tenants, groups, maxResults]) as unknown as PassageRow[]).map(toPassage);
  }

  /**
   * Every matching passage with its document's metadata, whoever may read it: for a stand-in of a
   * retrieval service that applies its own filter (the Bedrock stand-in in the tests). Never behind a tool.
   */
  async rankUnfiltered(query: string, maxResults: number): Promise<RankedPassage[]> {
    const fts = toFtsQuery(query);
    if (!fts) return [];
    const { db } = await this.#open();
    const rows = db.selectObjects(RANK_ALL_SQL, [fts, maxResults]) as unknown as (PassageRow & { metadata: string })[];
    return rows.map((r) => ({ ...toPassage(r), metadata: JSON.parse(r.metadata) as Record<string, unknown> }));
  }

  async close(): Promise<void> {
    const index = await this.#index?.catch(() => undefined);
    index?.db.close();
  }

  #open(): Promise<Index> {
    this.#index ??= (async () => {
      const { oo1 } = await loadSqlite();
      const db = new oo1.DB(":memory:", "c");
      db.exec(
        "CREATE VIRTUAL TABLE passages USING fts5(source UNINDEXED, tenants UNINDEXED, groups UNINDEXED, metadata UNINDEXED, " +
          "title, heading, text, tokenize = 'porter unicode61')",
      );
      const dir = this.#corpusDir;
      const rows = readdirSync(dir)
        .filter((f) => f.endsWith(".md"))
        .sort()
        .flatMap((file) => sections(file, metadataOf(dir, file), readFileSync(join(dir, file), "utf8"), this.#maxChars));
      // A list that is absent or not a list of strings holds nothing: the document is found by no one.
      const list = (metadata: Record<string, unknown>, key: string) => {
        const value = Object.hasOwn(metadata, key) ? metadata[key] : undefined;
        return JSON.stringify(Array.isArray(value) ? value : []);
      };
      db.exec({
        sql:
          "INSERT INTO passages (source, tenants, groups, metadata, title, heading, text) " +
          "SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6 FROM json_each(?)",
        bind: [
          JSON.stringify(
            rows.map((s) => [
              s.source,
              list(s.metadata, this.#keys.tenantsKey),
              list(s.metadata, this.#keys.groupsKey),
              JSON.stringify(s.metadata),
              s.title,
              s.heading,
              s.text,
            ]),
          ),
        ],
      });
      return { db, passageCount: rows.length };
    })();
    return this.#index;
  }
}
