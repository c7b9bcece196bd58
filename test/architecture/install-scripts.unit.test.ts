import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

/**
 * npm 11 runs no dependency's install script that package.json's `allowScripts` does not name, and
 * ends `npm ci` with a warning listing each one. Every dependency with a script is decided here, so
 * a fresh `npm ci` warns of none (README, "Installing and testing, measured").
 */
const read = (path: string) => JSON.parse(readFileSync(new URL(`../../${path}`, import.meta.url), "utf8"));

describe("install scripts", () => {
  describe("package.json allowScripts", () => {
    it("returns a decision for every locked dependency that has an install script", () => {
      const lock = read("package-lock.json") as { packages: Record<string, { hasInstallScript?: boolean }> };
      const withScripts = Object.entries(lock.packages)
        .filter(([path, entry]) => path !== "" && entry.hasInstallScript)
        .map(([path]) => path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length));
      const allowScripts = (read("package.json") as { allowScripts?: Record<string, boolean> }).allowScripts ?? {};
      expect(withScripts.length).toBeGreaterThan(0);
      expect(withScripts.filter((name) => !(name in allowScripts))).toEqual([]);
    });
  });
});
