import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Database } from "@sqlite.org/sqlite-wasm";
import { loadSqlite } from "../sql/sqlite-wasm.js";
import type { DocumentRetriever, Passage } from "./document-retriever.js";

/** The bundled handbook of the sample company. */
export const DEFAULT_CORPUS_DIR = fileURLToPath(new URL("./corpus/", import.meta.url));
/** Passages longer than this many characters are split at paragraph boundaries. */
export const DEFAULT_MAX_PASSAGE_CHARS = 1_200;

interface Section {
  source: string;
  title: string;
  heading: string;
  text: string;
}

/** Splits a markdown document into passages: one per `##` section, long ones by paragraph. */
function sections(source: string, markdown: string, maxChars: number): Section[] {
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
        out.push({ source, title, heading, text: current });
        current = "";
      }
      current = current ? `${current}\n\n${p}` : p;
    }
    if (current) out.push({ source, title, heading, text: current });
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

export interface LocalDocumentIndexOptions {
  /** Directory of `.md` files. Default: `DEFAULT_CORPUS_DIR`. */
  corpusDir?: string;
  /** Default: `DEFAULT_MAX_PASSAGE_CHARS`. */
  maxPassageChars?: number;
}

/** bm25 weights per column: source (unindexed), title, heading, text. */
const SEARCH_SQL = "SELECT source, title, heading, text, bm25(passages, 0, 2.0, 3.0, 1.0) AS rank FROM passages WHERE passages MATCH ? ORDER BY rank LIMIT ?";

interface Index {
  db: Database;
  passageCount: number;
}

/**
 * Full-text search over a folder of markdown documents: an in-memory SQLite FTS5 index (porter
 * stemming), ranked with bm25, headings weighted above body text. Built on the first search (or
 * `passageCount()`), so a deployment that never searches never loads SQLite.
 */
export class LocalDocumentIndex implements DocumentRetriever {
  readonly #corpusDir: string;
  readonly #maxChars: number;
  #index: Promise<Index> | undefined;

  constructor(options: LocalDocumentIndexOptions = {}) {
    this.#corpusDir = options.corpusDir ?? DEFAULT_CORPUS_DIR;
    this.#maxChars = options.maxPassageChars ?? DEFAULT_MAX_PASSAGE_CHARS;
  }

  /** Passages in the index (building it if no search has yet). */
  async passageCount(): Promise<number> {
    return (await this.#open()).passageCount;
  }

  async search(query: string, maxResults: number): Promise<Passage[]> {
    const fts = toFtsQuery(query);
    if (!fts) return [];
    const { db } = await this.#open();
    const rows = db.selectObjects(SEARCH_SQL, [fts, maxResults]) as { source: string; title: string; heading: string; text: string; rank: number }[];
    return rows.map((r) => ({
      source: r.source,
      title: r.title,
      heading: r.heading || undefined,
      text: r.text,
      // bm25 is lower-is-better and negative; flip it so that higher is better, as for Bedrock.
      score: Number((-r.rank).toFixed(3)),
    }));
  }

  async close(): Promise<void> {
    const index = await this.#index?.catch(() => undefined);
    index?.db.close();
  }

  #open(): Promise<Index> {
    this.#index ??= (async () => {
      const { oo1 } = await loadSqlite();
      const db = new oo1.DB(":memory:", "c");
      db.exec("CREATE VIRTUAL TABLE passages USING fts5(source UNINDEXED, title, heading, text, tokenize = 'porter unicode61')");
      const rows = readdirSync(this.#corpusDir)
        .filter((f) => f.endsWith(".md"))
        .sort()
        .flatMap((file) => sections(file, readFileSync(join(this.#corpusDir, file), "utf8"), this.#maxChars));
      db.exec({
        sql: "INSERT INTO passages (source, title, heading, text) SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3 FROM json_each(?)",
        bind: [JSON.stringify(rows.map((s) => [s.source, s.title, s.heading, s.text]))],
      });
      return { db, passageCount: rows.length };
    })();
    return this.#index;
  }
}
