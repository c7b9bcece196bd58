import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * The docs that say where things are, held to the code: every lib/ folder has its row in
 * docs/testing.md's layout table, and every module docs/architecture.md's turn walk names (its
 * sequence diagram included, which doc-links.unit.test.ts does not read) exists.
 */

const ROOT = resolve(import.meta.dirname, "../..");

/** The text under a `## ` heading, up to the next one. */
function section(markdown: string, heading: string): string {
  const start = markdown.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`no section "${heading}"`);
  const end = markdown.indexOf("\n## ", start + 1);
  return markdown.slice(start, end < 0 ? undefined : end);
}

/** The repository paths a text names (`lib/agent/graph.ts`, `lib/tools/`), and the bare module names in code spans (`cache-points.ts`). */
function namedPaths(text: string): { paths: string[]; bareModules: string[] } {
  const paths = [...text.matchAll(/\b(?:lib|functions|infra)\/[\w./-]*[\w/]/g)].map((m) => m[0]);
  const bareModules = [...text.matchAll(/`([\w-]+\.ts)`/g)].map((m) => m[1]);
  return { paths: [...new Set(paths)], bareModules: [...new Set(bareModules)] };
}

function libFiles(dir = join(ROOT, "lib")): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => (entry.isDirectory() ? libFiles(join(dir, entry.name)) : [entry.name]));
}

/** What a text names that the repository does not have. */
function missingNames(text: string, exists: (path: string) => boolean, moduleNames: ReadonlySet<string>): string[] {
  const { paths, bareModules } = namedPaths(text);
  return [...paths.filter((path) => !exists(path)), ...bareModules.filter((name) => !moduleNames.has(name))];
}

/** The lib/ folders a layout table has no row for. */
function foldersWithoutRow(table: string, folders: string[]): string[] {
  return folders.filter((folder) => !table.includes(`| \`lib/${folder}/\` |`));
}

const read = (path: string) => readFileSync(join(ROOT, path), "utf8");

describe("layout docs", () => {
  describe("missingNames", () => {
    it("returns the paths and bare module names that do not exist, wherever the text names them", () => {
      const text = "participant T as TurnRunner<br/>lib/agent/turn-runner.ts\n`lib/agent/gone.ts` and `cache-points.ts`, `lost.ts`, lib/tools/";
      const exists = (path: string) => ["lib/agent/turn-runner.ts", "lib/tools/"].includes(path);
      expect(missingNames(text, exists, new Set(["cache-points.ts"]))).toEqual(["lib/agent/gone.ts", "lost.ts"]);
    });
  });

  describe("foldersWithoutRow", () => {
    it("returns the folders the table has no row for", () => {
      expect(foldersWithoutRow("| `lib/agent/` | the graph |\n| `lib/store/` | stores |", ["agent", "store", "crypto"])).toEqual(["crypto"]);
    });
  });

  describe("the repository", () => {
    it("returns a row of docs/testing.md's layout table for every lib/ folder", () => {
      const folders = readdirSync(join(ROOT, "lib"), { withFileTypes: true })
        .filter((entry) => entry.isDirectory())
        .map((entry) => entry.name);
      expect(foldersWithoutRow(section(read("docs/testing.md"), "Layout"), folders)).toEqual([]);
    });

    it("returns an existing module for every one docs/architecture.md's turn walk names", () => {
      const walk = section(read("docs/architecture.md"), "A turn's walk");
      expect(namedPaths(walk).paths.length).toBeGreaterThan(20);
      expect(missingNames(walk, (path) => existsSync(join(ROOT, path)), new Set(libFiles()))).toEqual([]);
    });

    it("returns the limits, the archive node and the MCP tool runner in the turn walk", () => {
      const walk = section(read("docs/architecture.md"), "A turn's walk");
      for (const module of ["lib/limits/turn-admission.ts", "lib/store/turn-archive-store.ts", "lib/mcp/tenant-tool-runner.ts"]) expect(walk).toContain(module);
    });
  });
});
