import { BedrockAgentRuntimeClient } from "@aws-sdk/client-bedrock-agent-runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ToolError } from "../../../lib/errors.js";
import { BedrockKnowledgeBaseRetriever } from "../../../lib/tools/documents/bedrock-knowledge-base-retriever.js";
import { LocalDocumentIndex } from "../../../lib/tools/documents/local-document-index.js";
import { startBedrockAgentRuntimeEndpoint, type BedrockAgentRuntimeEndpoint } from "./bedrock-agent-runtime-endpoint.js";

describe("BedrockKnowledgeBaseRetriever", () => {
  const index = new LocalDocumentIndex();
  let endpoint: BedrockAgentRuntimeEndpoint;
  let client: BedrockAgentRuntimeClient;

  beforeAll(async () => {
    endpoint = await startBedrockAgentRuntimeEndpoint("KB12345678", index);
    client = new BedrockAgentRuntimeClient({
      region: "us-east-1",
      endpoint: endpoint.url,
      credentials: { accessKeyId: "AKIDEXAMPLE", secretAccessKey: "example" },
      maxAttempts: 1,
    });
  });
  afterAll(async () => {
    client.destroy();
    await endpoint.close();
    await index.close();
  });

  describe("search", () => {
    it("returns passages with their S3 source, asking for the requested number of results", async () => {
      const retriever = new BedrockKnowledgeBaseRetriever({ client, knowledgeBaseId: "KB12345678" });
      const passages = await retriever.search("who approves a discount above 15%", 3);
      expect(endpoint.requests.at(-1)?.body).toEqual({
        retrievalQuery: { text: "who approves a discount above 15%" },
        retrievalConfiguration: { vectorSearchConfiguration: { numberOfResults: 3 } },
      });
      expect(passages[0]).toMatchObject({ source: "s3://alder-pike-handbook/discount-policy.md", title: "Discount and deal approval policy" });
      expect(passages[0]?.text).toContain("VP of Sales");
    });

    it("throws a ToolError naming the service error for an unknown knowledge base", async () => {
      const retriever = new BedrockKnowledgeBaseRetriever({ client, knowledgeBaseId: "KBMISSING0" });
      const error = await retriever.search("margin", 3).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ToolError);
      expect((error as ToolError).message).toMatch(/ResourceNotFoundException/);
    });
  });
});
