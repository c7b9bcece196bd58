import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { LocalDocumentIndex } from "../../../lib/tools/documents/local-document-index.js";

/** A caller of no tenant and no groups: finds the documents open to everyone. */
const ANYONE = { audience: { tenant: null, groups: [] } };

/** A corpus of one document per audience, each a sidecar saying who may read it (or none). */
function accessCorpus(): string {
  const dir = mkdtempSync(join(tmpdir(), "corpus-"));
  const doc = (name: string, metadata?: Record<string, unknown>) => {
    writeFileSync(join(dir, `${name}.md`), `# ${name}\n\n## Pelican budget\nThe pelican budget of ${name}.\n`);
    if (metadata) writeFileSync(join(dir, `${name}.md.metadata.json`), JSON.stringify({ metadataAttributes: metadata }));
  };
  doc("public", { allowed_tenants: ["*"], allowed_groups: ["*"] });
  doc("acme-finance", { allowed_tenants: ["slack:T0ACME"], allowed_groups: ["finance"] });
  doc("acme-all", { allowed_tenants: ["slack:T0ACME", "teams:acme-entra"], allowed_groups: ["*"] });
  doc("globex-all", { allowed_tenants: ["api:globex"], allowed_groups: ["*"] });
  doc("no-sidecar");
  doc("groups-as-text", { allowed_tenants: ["*"], allowed_groups: "*" });
  return dir;
}

describe("LocalDocumentIndex", () => {
  const index = new LocalDocumentIndex();
  afterAll(async () => index.close());

  describe("constructor", () => {
    it("returns an index of every section of the bundled corpus", async () => {
      expect(await index.passageCount()).toBeGreaterThanOrEqual(40);
    });

    it("splits a long section into passages at paragraph boundaries", async () => {
      const dir = mkdtempSync(join(tmpdir(), "corpus-"));
      const paragraph = (n: number) => `Paragraph ${n} about zebras. ${"Filler words here. ".repeat(20)}`;
      writeFileSync(join(dir, "long.md"), `# Long\n\n## Only section\n${[1, 2, 3, 4].map(paragraph).join("\n\n")}\n`);
      const small = new LocalDocumentIndex({ corpusDir: dir, maxPassageChars: 800 });
      expect(await small.passageCount()).toBe(4);
      const hits = await small.search("zebras", 10, ANYONE);
      expect(hits.every((h) => h.heading === "Only section" && h.text.length <= 800)).toBe(true);
      await small.close();
    });
  });

  describe("search", () => {
    it("returns the October 2026 report first for why margin fell in October", async () => {
      const [top] = await index.search("why did gross margin fall in October 2026", 5, ANYONE);
      expect(top?.source).toBe("report-2026-10.md");
    });

    it("returns the approval tiers of the discount policy for who approves discounts above 15%", async () => {
      const [top] = await index.search("who approves a discount above 15%", 3, ANYONE);
      expect(top).toMatchObject({ source: "discount-policy.md", heading: "Approval tiers" });
      expect(top?.text).toContain("VP of Sales");
    });

    it("returns the gross margin definition for how gross margin is calculated", async () => {
      const [top] = await index.search("how is gross margin calculated", 3, ANYONE);
      expect(top).toMatchObject({ source: "metric-gross-margin.md", heading: "Definition" });
    });

    it("returns the West regional manager for who manages the West region", async () => {
      const hits = await index.search("West region manager", 3, ANYONE);
      expect(hits.map((h) => h.text).join("\n")).toContain("Daniel Okafor");
    });

    it("returns nothing for a query of punctuation only, instead of an FTS5 syntax error", async () => {
      await expect(index.search('"*( - ) ^', 5, ANYONE)).resolves.toEqual([]);
    });

    it("returns results for text that looks like FTS5 syntax", async () => {
      await expect(index.search('discount NEAR "policy" AND -approval*', 3, ANYONE)).resolves.not.toHaveLength(0);
    });

    it("returns the report passage naming the customers for which customers drove the decline", async () => {
      const hits = await index.search("which customers drove the margin decline", 3, ANYONE);
      const text = hits.map((h) => h.text).join("\n");
      expect(text).toContain("Cobalt Ridge Hospitals");
    });

    it("returns only documents whose sidecar lists the caller's tenant (or *) and one of their groups (or *)", async () => {
      const access = new LocalDocumentIndex({ corpusDir: accessCorpus() });
      const found = async (tenant: string | null, groups: string[]) =>
        (await access.search("pelican budget", 10, { audience: { tenant, groups } })).map((p) => p.source).sort();
      expect(await found("slack:T0ACME", ["finance"])).toEqual(["acme-all.md", "acme-finance.md", "public.md"]);
      expect(await found("slack:T0ACME", [])).toEqual(["acme-all.md", "public.md"]);
      expect(await found("teams:acme-entra", ["finance"])).toEqual(["acme-all.md", "public.md"]);
      expect(await found("api:globex", ["finance"])).toEqual(["globex-all.md", "public.md"]);
      expect(await found(null, [])).toEqual(["public.md"]);
      await access.close();
    });

    it("returns maxResults passages among those the caller may read, the filter applied before the limit", async () => {
      const access = new LocalDocumentIndex({ corpusDir: accessCorpus() });
      const hits = await access.search("pelican budget", 1, { audience: { tenant: "api:globex", groups: [] } });
      expect(hits).toHaveLength(1);
      expect(["globex-all.md", "public.md"]).toContain(hits[0]?.source);
      await access.close();
    });

    it("returns the bundled deal desk review only to the finance group", async () => {
      const query = "deal desk review October credit review commission withheld";
      expect((await index.search(query, 5, ANYONE)).map((p) => p.source)).not.toContain("deal-desk-review-2026-10.md");
      const finance = await index.search(query, 5, { audience: { tenant: "slack:T0ACME", groups: ["finance"] } });
      expect(finance[0]?.source).toBe("deal-desk-review-2026-10.md");
    });

    it("returns passages ordered best first", async () => {
      const hits = await index.search("Northbridge price increase notice", 5, ANYONE);
      const scores = hits.map((h) => h.score);
      expect(scores).toEqual([...scores].sort((a, b) => b - a));
      expect(hits[0]?.source).toBe("supplier-notice-networking-2026.md");
    });
  });
});
