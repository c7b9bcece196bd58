import { afterAll, describe, expect, it } from "vitest";
import { LocalDocumentIndex } from "../../../lib/tools/documents/local-document-index.js";
import { createSearchDocumentsTool } from "../../../lib/tools/documents/search-documents-tool.js";
import { ToolRegistry } from "../../../lib/tools/tool-registry.js";
import { apiPrincipal } from "../../../lib/auth/principal.js";

describe("search_documents", () => {
  const index = new LocalDocumentIndex();
  const registry = new ToolRegistry([createSearchDocumentsTool({ retriever: index, maxResults: 2 })]);
  const ctx = { conversationId: "c", turnId: "t", caller: { principal: apiPrincipal("u"), roles: [] } };
  afterAll(async () => index.close());

  describe("run", () => {
    it("returns numbered passages with source and heading", async () => {
      const result = await registry.execute({ id: "1", name: "search_documents", args: { query: "discount approval tiers" } }, ctx);
      expect(result.status).toBe("success");
      expect(result.content).toMatch(/^2 passages\n\n\[1\] source: discount-policy\.md \| Discount and deal approval policy › Approval tiers/);
    });

    it("returns as many passages as asked for, over the default", async () => {
      const result = await registry.execute({ id: "3", name: "search_documents", args: { query: "margin", maxResults: 6 } }, ctx);
      expect(result.content).toMatch(/^6 passages\n/);
    });

    it("returns the finance-only deal desk review to a caller with the finance role and not to one without", async () => {
      const args = { query: "deal desk review October credit review commission withheld", maxResults: 3 };
      const finance = await registry.execute(
        { id: "4", name: "search_documents", args },
        { ...ctx, caller: { principal: apiPrincipal("f", "acme"), roles: ["finance"] } },
      );
      const other = await registry.execute({ id: "5", name: "search_documents", args }, ctx);
      expect(finance.content).toContain("source: deal-desk-review-2026-10.md");
      expect(other.content).not.toContain("deal-desk-review-2026-10.md");
    });

    it("returns a hint when nothing matches", async () => {
      const result = await registry.execute({ id: "2", name: "search_documents", args: { query: "xylophone quasar" } }, ctx);
      expect(result).toEqual({ status: "success", content: 'No passages you may read match "xylophone quasar". Try other words.' });
    });
  });
});
