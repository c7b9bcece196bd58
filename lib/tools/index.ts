export type { ToolCallContext, ToolContext, ToolDefinition } from "./tool.js";
export { ToolRegistry } from "./tool-registry.js";
export type { ToolCallRequest, ToolCallResult, ToolLogger, ToolRegistryOptions, ToolSpec } from "./tool-registry.js";
export { ToolIdempotencyGuard, DEFAULT_TOOL_IDEMPOTENCY_KEY_PREFIX, DEFAULT_IN_PROGRESS_POLL_MS } from "./tool-idempotency-guard.js";
export type { ToolIdempotencyGuardOptions } from "./tool-idempotency-guard.js";
export { createDefaultTools } from "./create-default-tools.js";
export type { DefaultTools, DefaultToolsDeps } from "./create-default-tools.js";
export type { SecretSource } from "./secrets.js";

export { createSqlQueryTool } from "./sql/sql-query-tool.js";
export type { SqlQueryToolOptions } from "./sql/sql-query-tool.js";
export { checkReadOnlySql } from "./sql/read-only-sql.js";
export type { ReadOnlyCheck, SqlDialect } from "./sql/read-only-sql.js";
export type { QueryEngine, QueryLimits, QueryResult } from "./sql/query-engine.js";
export { SqliteQueryEngine } from "./sql/sqlite-query-engine.js";
export { AthenaQueryEngine } from "./sql/athena-query-engine.js";
export { formatResultTable } from "./sql/result-table.js";
export {
  buildSalesDatabase,
  OCTOBER_2026_STORY,
  SALES_ANCHOR_DATE,
  SALES_SCHEMA_DESCRIPTION,
} from "./sql/sales-dataset.js";

export { createSearchDocumentsTool } from "./documents/search-documents-tool.js";
export type { DocumentRetriever, Passage } from "./documents/document-retriever.js";
export { LocalDocumentIndex } from "./documents/local-document-index.js";
export { BedrockKnowledgeBaseRetriever } from "./documents/bedrock-knowledge-base-retriever.js";

export { createQuerySemanticModelTool } from "./powerbi/query-semantic-model-tool.js";
export { PowerBiClient } from "./powerbi/power-bi-client.js";
export { EntraTokenProvider } from "./powerbi/entra-token-provider.js";

export { createFollowUpTool } from "./follow-up/create-follow-up-tool.js";
export type { FollowUpDocument } from "./follow-up/create-follow-up-tool.js";
