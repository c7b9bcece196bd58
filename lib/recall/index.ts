export { ConversationSearch, bm25, DEFAULT_BM25_B, DEFAULT_BM25_K1, DEFAULT_SEMANTIC_WEIGHT, MAX_QUERY_TERMS } from "./conversation-search.js";
export type { ConversationSearchDeps, RecallHit, SearchOutcome, SearchRequest } from "./conversation-search.js";
export { BedrockEmbedder, cosine, DEFAULT_EMBEDDING_DIMENSIONS, DEFAULT_EMBEDDING_INPUT_CHARS, EmbeddingError } from "./embedder.js";
export type { BedrockEmbedderOptions, Embedder } from "./embedder.js";
export { quotedPhrases, recallTerms, termFrequencies } from "./recall-terms.js";
export {
  createSearchConversationTool,
  DEFAULT_RECALL_MAX_TOKENS,
  DEFAULT_RECALL_RESULTS,
  formatSearchOutcome,
  MAX_RECALL_QUERY_CHARS,
  MAX_RECALL_RESULTS,
  SEARCH_CONVERSATION_NAME,
} from "./search-conversation-tool.js";
export type { SearchConversationInput, SearchConversationToolOptions } from "./search-conversation-tool.js";
export { DEFAULT_RECALL_ARGS_CHARS, DEFAULT_RECALL_PREVIEW_CHARS, recallText, TurnIndexer } from "./turn-indexer.js";
export type { TurnIndexerDeps } from "./turn-indexer.js";
