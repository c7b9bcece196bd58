import { readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { SCREENSHOT_PATH, SCREENSHOT_VIEWPORT } from "../../scripts/console-screenshot.js";

const ROOT = resolve(import.meta.dirname, "../..");

/** Width and height from a PNG's IHDR chunk. */
function pngSize(bytes: Buffer): { width: number; height: number } {
  expect(bytes.subarray(1, 4).toString("latin1")).toBe("PNG");
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}

describe("the README's console screenshot", () => {
  it("is the picture npm run docs:screenshot writes: its path, its size, and the script behind the command", () => {
    const readme = readFileSync(join(ROOT, "README.md"), "utf8");
    expect(readme).toContain(`](${relative(ROOT, SCREENSHOT_PATH)})`);
    expect(pngSize(readFileSync(SCREENSHOT_PATH))).toEqual(SCREENSHOT_VIEWPORT);
    const { scripts } = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> };
    expect(scripts["docs:screenshot"]).toBe("tsx scripts/console-screenshot.ts");
  });
});
