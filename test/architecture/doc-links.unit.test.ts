import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

/**
 * The README and docs/ are read on GitHub and in a clone: every relative link must reach its file
 * and, with a `#fragment`, a heading of it; every repository path a code span names must exist.
 */

const ROOT = resolve(import.meta.dirname, "../..");
/** Code spans that start with one of these name a file or folder of the repository. */
const REPO_FOLDERS = ["lib/", "functions/", "infra/", "test/", "bench/", "docs/", "scripts/", "mutation/", ".ci/"];

/** Markdown without its fenced code blocks, whose `#` lines and brackets are code, not headings or links. */
const withoutFences = (text: string): string => text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "");

/** The anchors GitHub makes of a Markdown file's headings: lowercased, punctuation dropped, spaces as hyphens, repeats numbered. */
function headingAnchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const [, heading] of withoutFences(markdown).matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const slug = heading
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, "")
      .replace(/ /g, "-");
    const repeats = seen.get(slug) ?? 0;
    seen.set(slug, repeats + 1);
    anchors.add(repeats === 0 ? slug : `${slug}-${repeats}`);
  }
  return anchors;
}

/** What is wrong with the relative links and repository paths of one Markdown file under `root`, one line each. */
function brokenReferences(root: string, file: string): string[] {
  const text = withoutFences(readFileSync(join(root, file), "utf8"));
  const problems: string[] = [];
  // Links inside code spans are code; the spans themselves are checked as paths below.
  const prose = text.replace(/`[^`\n]*`/g, "");
  for (const [, target] of prose.matchAll(/\]\(([^)\s]+)(?: "[^"]*")?\)/g)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
    const [path, anchor] = target.split("#") as [string, string | undefined];
    const resolved = path === "" ? join(root, file) : join(dirname(join(root, file)), decodeURIComponent(path));
    if (!existsSync(resolved)) problems.push(`${file}: ${target}: no such file`);
    else if (anchor !== undefined && resolved.endsWith(".md") && !headingAnchors(readFileSync(resolved, "utf8")).has(anchor)) {
      problems.push(`${file}: ${target}: no such heading`);
    }
  }
  for (const [, span] of text.matchAll(/`([^`\n]+)`/g)) {
    const path = span.replace(/:\d+$/, "");
    // Placeholders and globs name no one file; an installed folder is made on first use.
    if (!REPO_FOLDERS.some((folder) => path.startsWith(folder)) || /[\s<>*{}…]|node_modules/.test(path)) continue;
    if (!existsSync(join(root, path))) problems.push(`${file}: \`${span}\`: no such path`);
  }
  return problems;
}

/**
 * Markdown files a document names in prose (`design.md`, `docs/x.md`) that the repository does not
 * have: a reader cannot follow a reference to a file outside it.
 */
function missingFilesNamed(root: string, file: string, known: Set<string>): string[] {
  const prose = withoutFences(readFileSync(join(root, file), "utf8"))
    .replace(/\]\([^)]*\)/g, "]")
    // A code span names a command's output or a path (checked above), not a document to read.
    .replace(/`[^`\n]*`/g, "");
  const named = [...prose.matchAll(/(?<![\w/.-])((?:[\w-]+\/)*[\w-]+\.md)\b/g)].map(([, name]) => name as string);
  return [...new Set(named)]
    .filter((name) => !known.has(name) && !known.has(name.split("/").pop() as string))
    .map((name) => `${file}: ${name}: not in the repository`);
}

/** Every Markdown file of the repository, by path and by file name. */
function markdownNames(root: string, dir = ""): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    if (entry.name === "node_modules" || entry.name.startsWith(".")) return [];
    const path = dir ? `${dir}/${entry.name}` : entry.name;
    if (entry.isDirectory()) return markdownNames(root, path);
    return entry.name.endsWith(".md") ? [path, entry.name] : [];
  });
}

/** The docs/ pages the README links to: its docs map must reach every page, so a moved section stays one link away. */
function docsPagesNotLinkedFromReadme(root: string): string[] {
  const readme = readFileSync(join(root, "README.md"), "utf8");
  const linked = new Set([...readme.matchAll(/\]\((docs\/[^)#\s]+\.md)(?:#[^)]*)?\)/g)].map(([, path]) => path));
  return documents(root)
    .filter((file) => file.startsWith("docs/") && !linked.has(file))
    .map((file) => `README.md: no link to ${file}`);
}

const documents = (root: string): string[] => [
  "README.md",
  ...readdirSync(join(root, "docs"))
    .filter((name) => name.endsWith(".md"))
    .map((name) => `docs/${name}`),
];

describe("doc links", () => {
  describe("README.md and docs/*.md", () => {
    it("returns no broken relative link, heading anchor or repository path", () => {
      expect(documents(ROOT).flatMap((file) => brokenReferences(ROOT, file))).toEqual([]);
    });

    it("returns no Markdown file named in prose that the repository does not have", () => {
      const known = new Set(markdownNames(ROOT));
      expect(documents(ROOT).flatMap((file) => missingFilesNamed(ROOT, file, known))).toEqual([]);
    });

    it("returns every docs/ page linked from the README (its docs map)", () => {
      expect(docsPagesNotLinkedFromReadme(ROOT)).toEqual([]);
    });
  });

  describe("missingFilesNamed", () => {
    const tree = mkdtempSync(join(tmpdir(), "threadwise-doc-names-"));
    afterAll(() => rmSync(tree, { recursive: true, force: true }));

    it("returns a file named in prose that does not exist, and nothing for one that does or one in a code block", () => {
      mkdirSync(join(tree, "docs"), { recursive: true });
      writeFileSync(join(tree, "docs/guide.md"), "# Guide\n");
      writeFileSync(join(tree, "README.md"), "See docs/guide.md and guide.md, beyond design.md.\n```\nnotes.md\n```\n");
      expect(missingFilesNamed(tree, "README.md", new Set(markdownNames(tree)))).toEqual(["README.md: design.md: not in the repository"]);
    });
  });

  describe("docsPagesNotLinkedFromReadme", () => {
    const tree = mkdtempSync(join(tmpdir(), "threadwise-doc-map-"));
    afterAll(() => rmSync(tree, { recursive: true, force: true }));

    it("returns a docs/ page the README does not link to", () => {
      mkdirSync(join(tree, "docs"), { recursive: true });
      writeFileSync(join(tree, "docs/a.md"), "# A\n");
      writeFileSync(join(tree, "docs/b.md"), "# B\n");
      writeFileSync(join(tree, "README.md"), "[a](docs/a.md#a)\n");
      expect(docsPagesNotLinkedFromReadme(tree)).toEqual(["README.md: no link to docs/b.md"]);
    });
  });

  describe("brokenReferences", () => {
    const tree = mkdtempSync(join(tmpdir(), "threadwise-doc-links-"));
    afterAll(() => rmSync(tree, { recursive: true, force: true }));

    it("returns a missing file, a missing heading and a missing repository path, and nothing for ones that exist", () => {
      mkdirSync(join(tree, "docs"), { recursive: true });
      mkdirSync(join(tree, "lib"), { recursive: true });
      writeFileSync(join(tree, "lib/app.ts"), "");
      writeFileSync(join(tree, "docs/guide.md"), "# Guide\n\n## Large outputs: `read_tool_output`\n\n## Set-up\n\n## Set-up\n");
      writeFileSync(
        join(tree, "README.md"),
        [
          "[ok](docs/guide.md#large-outputs-read_tool_output), [repeat](docs/guide.md#set-up-1), [here](#readme), [web](https://example.com/x#y)",
          "[gone](docs/missing.md), [moved](docs/guide.md#set-up-2), `lib/app.ts`, `lib/<name>.ts`, `lib/gone.ts`",
          "```bash",
          "# not a heading; [not](a-link.md)",
          "```",
          "# Readme",
        ].join("\n"),
      );
      expect(brokenReferences(tree, "README.md")).toEqual([
        "README.md: docs/missing.md: no such file",
        "README.md: docs/guide.md#set-up-2: no such heading",
        "README.md: `lib/gone.ts`: no such path",
      ]);
    });
  });
});
