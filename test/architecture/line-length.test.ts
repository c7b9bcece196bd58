import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * Lines under 160 characters (the house style). Biome's `lineWidth` wraps code but not a long
 * string, comment or JSON value, so this test reads every file the repository tracks, or would
 * track, except prose (Markdown), generated charts, the document corpus and the sufficiency suite's cases.
 */

const ROOT = resolve(import.meta.dirname, "../..");
const MAX_LINE = 160;
const SKIPPED = [
  /\.md$/,
  /\.svg$/,
  /\.png$/,
  /(^|\/)package-lock\.json$/,
  /^lib\/tools\/documents\/corpus\//,
  // The context-sufficiency suite: generated data, one JSON case a line.
  /^bench\/sufficiency\/cases\//,
];

/** `path:line (length)` of each line longer than `max` characters. */
function longLines(path: string, text: string, max: number): string[] {
  return text.split("\n").flatMap((line, i) => ([...line].length > max ? [`${path}:${i + 1} (${[...line].length})`] : []));
}

function sourceFiles(): string[] {
  const listed = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: ROOT, encoding: "utf8" });
  return listed.split("\0").filter((path) => path.length > 0 && !SKIPPED.some((pattern) => pattern.test(path)));
}

describe("line length", () => {
  describe("longLines", () => {
    it("returns each line over the limit with its number, and nothing for lines at it", () => {
      const text = ["a".repeat(MAX_LINE), "b".repeat(MAX_LINE + 1), "", `${"é".repeat(MAX_LINE)}`].join("\n");
      expect(longLines("x.ts", text, MAX_LINE)).toEqual([`x.ts:2 (${MAX_LINE + 1})`]);
    });
  });

  describe("the repository", () => {
    it(`returns no line over ${MAX_LINE} characters in code, configuration or markup`, () => {
      const found = sourceFiles().flatMap((path) => {
        let text: string;
        try {
          text = readFileSync(join(ROOT, path), "utf8");
        } catch {
          // Listed but deleted in the working tree.
          return [];
        }
        return text.includes("\0") ? [] : longLines(path, text, MAX_LINE);
      });
      expect(found).toEqual([]);
    });
  });
});
