import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { LocalDocumentIndex } from "../../../lib/tools/documents/local-document-index.js";

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
      const hits = await small.search("zebras", 10);
      expect(hits.every((h) => h.heading === "Only section" && h.text.length <= 800)).toBe(true);
      await small.close();
    });
  });

  describe("search", () => {
    it("returns the October 2026 report first for why margin fell in October", async () => {
      const [top] = await index.search("why did gross margin fall in October 2026", 5);
      expect(top?.source).toBe("report-2026-10.md");
    });

    it("returns the approval tiers of the discount policy for who approves discounts above 15%", async () => {
      const [top] = await index.search("who approves a discount above 15%", 3);
      expect(top).toMatchObject({ source: "discount-policy.md", heading: "Approval tiers" });
      expect(top?.text).toContain("VP of Sales");
    });

    it("returns the gross margin definition for how gross margin is calculated", async () => {
      const [top] = await index.search("how is gross margin calculated", 3);
      expect(top).toMatchObject({ source: "metric-gross-margin.md", heading: "Definition" });
    });

    it("returns the West regional manager for who manages the West region", async () => {
      const hits = await index.search("West region manager", 3);
      expect(hits.map((h) => h.text).join("\n")).toContain("Daniel Okafor");
    });

    it("returns nothing for a query of punctuation only, instead of an FTS5 syntax error", async () => {
      await expect(index.search('"*( - ) ^', 5)).resolves.toEqual([]);
    });

    it("returns results for text that looks like FTS5 syntax", async () => {
      await expect(index.search('discount NEAR "policy" AND -approval*', 3)).resolves.not.toHaveLength(0);
    });

    it("returns the report passage naming the customers for which customers drove the decline", async () => {
      const hits = await index.search("which customers drove the margin decline", 3);
      const text = hits.map((h) => h.text).join("\n");
      expect(text).toContain("Cobalt Ridge Hospitals");
    });

    it("returns passages ordered best first", async () => {
      const hits = await index.search("Northbridge price increase notice", 5);
      const scores = hits.map((h) => h.score);
      expect(scores).toEqual([...scores].sort((a, b) => b - a));
      expect(hits[0]?.source).toBe("supplier-notice-networking-2026.md");
    });
  });
});
