import type { DocumentAudience } from "./document-access.js";

/** One retrieved passage: where it comes from and what it says. */
export interface Passage {
  /** File name or URI of the source document. */
  source: string;
  /** Document title and section heading, when known. */
  title?: string;
  heading?: string;
  text: string;
  /** Higher is better; comparable only within one search. */
  score: number;
}

/** What a search is for: whose documents, and the signal that ends it. */
export interface SearchOptions {
  /** Only documents whose metadata opens them to this audience are searched (`document-access.ts`). */
  audience: DocumentAudience;
  signal?: AbortSignal;
}

/** Retrieval behind `search_documents`. Failures are `ToolError`s the model can act on. */
export interface DocumentRetriever {
  search(query: string, maxResults: number, options: SearchOptions): Promise<Passage[]>;
}
