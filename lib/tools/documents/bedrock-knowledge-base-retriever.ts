import type { BedrockAgentRuntimeClient, RetrievalResultLocation } from "@aws-sdk/client-bedrock-agent-runtime";
import { ToolError } from "../../errors.js";
import { DEFAULT_DOCUMENT_ACCESS_KEYS, retrievalFilter, type DocumentAccessKeys } from "./document-access.js";
import type { DocumentRetriever, Passage, SearchOptions } from "./document-retriever.js";

/** Loaded on the first search, not at start-up, so a cold start without searches does not load it. */
let agentRuntimeSdk: Promise<typeof import("@aws-sdk/client-bedrock-agent-runtime")> | undefined;
const loadAgentRuntimeSdk = () => (agentRuntimeSdk ??= import("@aws-sdk/client-bedrock-agent-runtime"));

export interface BedrockKnowledgeBaseRetrieverOptions {
  /** Default: one client, created on the first search in `region`. */
  client?: BedrockAgentRuntimeClient;
  /** Region of the client created on the first search. */
  region?: string;
  knowledgeBaseId: string;
  /** The metadata keys that say who may read a document. Default: `DEFAULT_DOCUMENT_ACCESS_KEYS`. */
  accessKeys?: DocumentAccessKeys;
}

function sourceOf(location: RetrievalResultLocation | undefined): string {
  return (
    location?.s3Location?.uri ??
    location?.webLocation?.url ??
    location?.confluenceLocation?.url ??
    location?.sharePointLocation?.url ??
    location?.salesforceLocation?.url ??
    location?.customDocumentLocation?.id ??
    location?.type ??
    "unknown"
  );
}

/**
 * Retrieval from an Amazon Bedrock knowledge base (`Retrieve`), as passages with their source. Every
 * request carries the audience's metadata filter (`retrievalFilter`), so the knowledge base returns
 * only documents open to the asking user's tenant and groups.
 */
export class BedrockKnowledgeBaseRetriever implements DocumentRetriever {
  readonly #o: BedrockKnowledgeBaseRetrieverOptions;
  #client: BedrockAgentRuntimeClient | undefined;

  constructor(options: BedrockKnowledgeBaseRetrieverOptions) {
    this.#o = options;
    this.#client = options.client;
  }

  async search(query: string, maxResults: number, { audience, signal }: SearchOptions): Promise<Passage[]> {
    const { BedrockAgentRuntimeClient, RetrieveCommand } = await loadAgentRuntimeSdk();
    const client = (this.#client ??= new BedrockAgentRuntimeClient({ region: this.#o.region }));
    let response;
    try {
      response = await client.send(
        new RetrieveCommand({
          knowledgeBaseId: this.#o.knowledgeBaseId,
          retrievalQuery: { text: query },
          retrievalConfiguration: {
            vectorSearchConfiguration: { numberOfResults: maxResults, filter: retrievalFilter(audience, this.#o.accessKeys ?? DEFAULT_DOCUMENT_ACCESS_KEYS) },
          },
        }),
        { abortSignal: signal },
      );
    } catch (error) {
      const name = error instanceof Error ? error.name : "Error";
      throw new ToolError(`the knowledge base could not be searched (${name}); try again or answer without documents`, "search_documents", {
        cause: error,
      });
    }
    return (response.retrievalResults ?? [])
      .filter((r) => r.content?.text)
      .map((r) => {
        const title = r.metadata?.title;
        return {
          source: sourceOf(r.location),
          ...(typeof title === "string" && { title }),
          text: r.content!.text!,
          score: Number((r.score ?? 0).toFixed(3)),
        };
      });
  }
}
