import { BedrockAgentRuntimeClient } from "@aws-sdk/client-bedrock-agent-runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ToolError } from "../../../lib/errors.js";
import { BedrockKnowledgeBaseRetriever } from "../../../lib/tools/documents/bedrock-knowledge-base-retriever.js";
import { LocalDocumentIndex } from "../../../lib/tools/documents/local-document-index.js";
import { RetrieveCommand } from "@aws-sdk/client-bedrock-agent-runtime";
import { startBedrockAgentRuntimeEndpoint, type BedrockAgentRuntimeEndpoint } from "./bedrock-agent-runtime-endpoint.js";

const ALICE = { audience: { tenant: "slack:T0ACME", groups: ["finance", "analyst"] } };
const MALLORY = { audience: { tenant: "api:globex", groups: [] } };

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
      const passages = await retriever.search("who approves a discount above 15%", 3, MALLORY);
      expect(endpoint.requests.at(-1)?.body).toMatchObject({
        retrievalQuery: { text: "who approves a discount above 15%" },
        retrievalConfiguration: { vectorSearchConfiguration: { numberOfResults: 3 } },
      });
      expect(passages[0]).toMatchObject({ source: "s3://alder-pike-handbook/discount-policy.md", title: "Discount and deal approval policy" });
      expect(passages[0]?.text).toContain("VP of Sales");
    });

    it("sends each user's tenant and groups as the metadata filter on allowed_tenants and allowed_groups", async () => {
      const retriever = new BedrockKnowledgeBaseRetriever({ client, knowledgeBaseId: "KB12345678" });
      await retriever.search("deal desk review", 3, ALICE);
      await retriever.search("deal desk review", 3, MALLORY);
      const filters = endpoint.requests
        .slice(-2)
        .map((r) => (r.body.retrievalConfiguration as { vectorSearchConfiguration: { filter: unknown } }).vectorSearchConfiguration.filter);
      expect(filters).toEqual([
        {
          andAll: [
            { orAll: [{ listContains: { key: "allowed_tenants", value: "*" } }, { listContains: { key: "allowed_tenants", value: "slack:T0ACME" } }] },
            {
              orAll: [
                { listContains: { key: "allowed_groups", value: "*" } },
                { listContains: { key: "allowed_groups", value: "finance" } },
                { listContains: { key: "allowed_groups", value: "analyst" } },
              ],
            },
          ],
        },
        {
          andAll: [
            { orAll: [{ listContains: { key: "allowed_tenants", value: "*" } }, { listContains: { key: "allowed_tenants", value: "api:globex" } }] },
            { listContains: { key: "allowed_groups", value: "*" } },
          ],
        },
      ]);
    });

    it("returns a finance user the restricted deal desk review and a user without the group none of it", async () => {
      const retriever = new BedrockKnowledgeBaseRetriever({ client, knowledgeBaseId: "KB12345678" });
      const query = "deal desk review October credit review commission withheld";
      const alice = await retriever.search(query, 5, ALICE);
      const mallory = await retriever.search(query, 5, MALLORY);
      expect(alice[0]?.source).toBe("s3://alder-pike-handbook/deal-desk-review-2026-10.md");
      expect(mallory.map((p) => p.source)).not.toContain("s3://alder-pike-handbook/deal-desk-review-2026-10.md");
    });

    it("uses the configured metadata keys", async () => {
      const retriever = new BedrockKnowledgeBaseRetriever({ client, knowledgeBaseId: "KB12345678", accessKeys: { tenantsKey: "org", groupsKey: "teams" } });
      expect(await retriever.search("discount", 3, MALLORY)).toEqual([]);
      expect(JSON.stringify(endpoint.requests.at(-1)?.body)).toContain('"key":"org"');
    });

    it("is refused by the stand-in when a request carries no filter, as every request did before", async () => {
      const error = await client
        .send(new RetrieveCommand({ knowledgeBaseId: "KB12345678", retrievalQuery: { text: "discount" } }))
        .catch((e: unknown) => e as Error);
      expect((error as Error).name).toBe("ValidationException");
    });

    it("throws a ToolError naming the service error for an unknown knowledge base", async () => {
      const retriever = new BedrockKnowledgeBaseRetriever({ client, knowledgeBaseId: "KBMISSING0" });
      const error = await retriever.search("margin", 3, ALICE).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ToolError);
      expect((error as ToolError).message).toMatch(/ResourceNotFoundException/);
    });
  });
});
