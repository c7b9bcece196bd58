import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OPERATIONS } from "../../lib/api/openapi.js";
import { apiReferenceHtml } from "../../lib/local/api-reference.js";
import { startTestServer, type TestServer } from "../support/api-client.js";

describe("api-reference", () => {
  describe("apiReferenceHtml", () => {
    it("returns a section for every operation of the OpenAPI document, with its method, path and answers", () => {
      const html = apiReferenceHtml();
      for (const op of OPERATIONS) {
        expect(html).toContain(`<section class="ref-operation" id="${op.operationId}"`);
        expect(html).toContain(`<code>${op.path}</code>`);
      }
      expect(html).toContain("<td>409</td>");
      expect(html).toContain('<a href="/openapi.json">');
    });

    it("returns the document's text escaped, never as markup", () => {
      const html = apiReferenceHtml({
        info: { title: "<script>alert(1)</script>", version: "1" },
        paths: { "/x": { get: { operationId: "x", summary: 'a "b" <i>c</i>', responses: { "200": { description: "ok" } } } } },
      });
      expect(html).not.toContain("<script>");
      expect(html).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
      expect(html).toContain("a &quot;b&quot; &lt;i&gt;c&lt;/i&gt;");
    });
  });

  describe("GET /docs on the local server", () => {
    let t: TestServer;
    beforeAll(async () => {
      t = await startTestServer();
    });
    afterAll(() => t.close());

    it("returns the reference page with a policy that allows no script and nothing from elsewhere", async () => {
      const res = await fetch(`${t.url}/docs`);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
      const policy = res.headers.get("content-security-policy") ?? "";
      expect(policy).toContain("default-src 'none'");
      expect(policy).not.toContain("script-src");
      const html = await res.text();
      expect(html).not.toMatch(/<script|https?:\/\/(?!127\.0\.0\.1)[a-z]/i);
      expect(html).toContain('id="postMessage"');
    });

    it("is linked from the console's page", async () => {
      const page = await (await fetch(`${t.url}/`)).text();
      expect(page).toContain('<a class="api-reference-link" href="/docs"');
    });
  });
});
