import type { AthenaClient } from "@aws-sdk/client-athena";
import type { BedrockAgentRuntimeClient } from "@aws-sdk/client-bedrock-agent-runtime";
import type { Collection } from "mongodb";
import type { ToolsConfig } from "../config/tools-config.js";
import { BedrockKnowledgeBaseRetriever } from "./documents/bedrock-knowledge-base-retriever.js";
import type { DocumentRetriever } from "./documents/document-retriever.js";
import { LocalDocumentIndex } from "./documents/local-document-index.js";
import { createSearchDocumentsTool } from "./documents/search-documents-tool.js";
import type { ContentCipher } from "../crypto/content-cipher.js";
import { createFollowUpTool, type FollowUpDocument } from "./follow-up/create-follow-up-tool.js";
import { EntraTokenProvider } from "./powerbi/entra-token-provider.js";
import { PowerBiClient } from "./powerbi/power-bi-client.js";
import { createQuerySemanticModelTool } from "./powerbi/query-semantic-model-tool.js";
import type { SecretSource } from "./secrets.js";
import { AthenaQueryEngine } from "./sql/athena-query-engine.js";
import type { QueryEngine } from "./sql/query-engine.js";
import { RowScopedQueryEngine } from "./sql/row-scoped-query-engine.js";
import { buildSalesDatabase, SALES_SCHEMA_DESCRIPTION } from "./sql/sales-dataset.js";
import { createSqlQueryTool } from "./sql/sql-query-tool.js";
import { SqliteQueryEngine } from "./sql/sqlite-query-engine.js";
import type { ToolDefinition } from "./tool.js";
import { SAMPLE_QUESTIONS } from "./sample-questions.js";

export interface DefaultToolsDeps {
  /** Where `create_follow_up` records follow-ups (the `follow_ups` collection). */
  followUps: Collection<FollowUpDocument>;
  /** What seals a follow-up's text (the database's cipher). Default: recorded clear. */
  followUpCipher?: ContentCipher;
  /** Power BI credentials are read from here. */
  secrets: SecretSource;
  /** Reused when given; otherwise created on first use, once, for the container. */
  athenaClient?: AthenaClient;
  bedrockAgentRuntimeClient?: BedrockAgentRuntimeClient;
  fetch?: typeof fetch;
}

export interface DefaultTools {
  tools: ToolDefinition[];
  /** Stops the local SQL query workers and closes the local document index. */
  close(): Promise<void>;
}

/**
 * The deployment's tools, chosen by configuration: SQLite and the bundled handbook locally,
 * Athena and a Bedrock knowledge base in AWS; Power BI when configured; `create_follow_up`
 * always (it posts only when a webhook is configured). Per-tool roles (`TOOL_ROLES`) are applied by the registry.
 */
export function createDefaultTools(config: ToolsConfig, deps: DefaultToolsDeps): DefaultTools {
  const closers: (() => Promise<void> | void)[] = [];

  const tools: ToolDefinition[] = [];
  const sql = config.sql;
  if (sql.engine !== "none") {
    const engine: QueryEngine =
      sql.engine === "athena"
        ? new AthenaQueryEngine({
            client: deps.athenaClient,
            region: sql.region,
            workgroup: sql.workgroup,
            database: sql.database,
            catalog: sql.catalog,
            outputLocation: sql.outputLocation,
            schemaDescription: sql.schemaDescription ?? SALES_SCHEMA_DESCRIPTION,
            access: sql.access && { rules: sql.access },
          })
        : sql.engine === "sqlite" && sql.rowPolicy
          ? new RowScopedQueryEngine({
              policy: sql.rowPolicy,
              image: () => buildSalesDatabase(),
              engineFor: (image) => new SqliteQueryEngine({ image, schemaDescription: SALES_SCHEMA_DESCRIPTION }),
            })
          : new SqliteQueryEngine({ image: () => buildSalesDatabase(), schemaDescription: SALES_SCHEMA_DESCRIPTION });
    closers.push(() => engine.close());
    // With per-role access (Athena's assumed roles, the sample database's row filters) the rows depend on who asks: they are that user's.
    const perUser = (sql.engine === "athena" && sql.access !== undefined) || (sql.engine === "sqlite" && sql.rowPolicy !== undefined);
    const tool = {
      ...createSqlQueryTool({ engine, maxRows: sql.maxRows, maxBytes: sql.maxBytes, timeoutMs: sql.timeoutMs }),
      ...(perUser && { readsAsUser: true }),
    };
    tools.push(sql.engine === "sqlite" ? { ...tool, examples: SAMPLE_QUESTIONS.sql_query } : tool);
  }

  const documents = config.documents;
  if (documents.engine !== "none") {
    let retriever: DocumentRetriever;
    if (documents.engine === "bedrock-kb") {
      retriever = new BedrockKnowledgeBaseRetriever({
        client: deps.bedrockAgentRuntimeClient,
        region: documents.region,
        knowledgeBaseId: documents.knowledgeBaseId,
        accessKeys: documents.access,
      });
    } else {
      const index = new LocalDocumentIndex({ accessKeys: documents.access });
      closers.push(() => index.close());
      retriever = index;
    }
    // Passages are filtered by the asker's tenant and groups (`document-access.ts`): what one user found is theirs.
    const tool = { ...createSearchDocumentsTool({ retriever, maxResults: documents.maxResults }), readsAsUser: true };
    tools.push(documents.engine === "local" ? { ...tool, examples: SAMPLE_QUESTIONS.search_documents } : tool);
  }

  if (config.powerBi) {
    const p = config.powerBi;
    const tokens = new EntraTokenProvider({
      loginUrl: p.loginUrl,
      tenantId: p.tenantId,
      secrets: deps.secrets,
      clientIdSecret: p.clientIdSecret,
      clientSecretSecret: p.clientSecretSecret,
      fetch: deps.fetch,
    });
    const client = new PowerBiClient({ apiUrl: p.apiUrl, groupId: p.groupId, datasetId: p.datasetId, tokens, fetch: deps.fetch });
    // Every query runs as the asking user (Power BI's effective identity): its rows are that user's.
    tools.push({
      ...createQuerySemanticModelTool({
        client,
        identities: { entraTenantId: p.tenantId, map: p.identityMap },
        maxRows: config.sql.maxRows,
        maxBytes: config.sql.maxBytes,
        modelDescription: p.modelDescription,
      }),
      readsAsUser: true,
    });
  }

  tools.push({
    ...createFollowUpTool({ collection: deps.followUps, webhookUrl: config.followUpWebhookUrl, fetch: deps.fetch, cipher: deps.followUpCipher }),
    examples: SAMPLE_QUESTIONS.create_follow_up,
  });

  return {
    tools,
    async close() {
      for (const close of closers) await close();
    },
  };
}
