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

/** Retrieval behind `search_documents`. Failures are `ToolError`s the model can act on. */
export interface DocumentRetriever {
  search(query: string, maxResults: number, signal?: AbortSignal): Promise<Passage[]>;
}
