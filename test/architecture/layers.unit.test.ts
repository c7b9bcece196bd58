import { readdirSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * Every folder and top-level file of lib/ is in a layer of `.dependency-cruiser.cjs`: a folder in
 * none (a new `lib/crypto/`) would be under no layer rule, so an upward import from it or into it
 * would pass `npm run lint`. The layers are read off the config's own rules: each `layer-*` rule
 * forbids its layer (`from`) to import the layers above it (`to`), the last rule's `to` being the top.
 */

const ROOT = resolve(import.meta.dirname, "../..");

interface Rule {
  name: string;
  from: { path?: string };
  to: { path?: string | string[] };
}

function layerPaths(forbidden: Rule[]): RegExp[] {
  const rules = forbidden.filter((rule) => rule.name.startsWith("layer-"));
  const top = [rules.at(-1)?.to.path ?? []].flat();
  return [...rules.map((rule) => rule.from.path ?? ""), ...top.slice(-1)].map((path) => new RegExp(path));
}

/** The entries of lib/ no layer names: for a folder, a file in it; for a top-level file, the file. */
function outsideLayers(entries: { name: string; folder: boolean }[], layers: RegExp[]): string[] {
  return entries.map(({ name, folder }) => (folder ? `lib/${name}/index.ts` : `lib/${name}`)).filter((path) => !layers.some((layer) => layer.test(path)));
}

function libEntries(): { name: string; folder: boolean }[] {
  return readdirSync(join(ROOT, "lib"), { withFileTypes: true })
    .filter((entry) => entry.isDirectory() || (entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts")))
    .map((entry) => ({ name: entry.name, folder: entry.isDirectory() }));
}

const config = createRequire(import.meta.url)(join(ROOT, ".dependency-cruiser.cjs")) as { forbidden: Rule[] };

describe("layers", () => {
  describe("outsideLayers", () => {
    it("returns a folder or file that no layer names, and nothing for those a layer names", () => {
      const layers = [/^lib\/store\//, /^lib\/(errors|clock)[.]ts$/];
      const entries = [
        { name: "store", folder: true },
        { name: "errors.ts", folder: false },
        { name: "crypto", folder: true },
        { name: "random.ts", folder: false },
      ];
      expect(outsideLayers(entries, layers)).toEqual(["lib/crypto/index.ts", "lib/random.ts"]);
    });
  });

  describe("the repository", () => {
    it("returns the lowest and the highest layer from the config's rules", () => {
      const layers = layerPaths(config.forbidden);
      expect(layers[0].test("lib/errors.ts")).toBe(true);
      expect(layers.at(-1)?.test("lib/local/main.ts")).toBe(true);
    });

    it("returns no lib/ folder or file outside every layer", () => {
      expect(outsideLayers(libEntries(), layerPaths(config.forbidden))).toEqual([]);
    });

    it("returns no lib/ folder in two layers", () => {
      const layers = layerPaths(config.forbidden);
      const doubled = libEntries()
        .map(({ name, folder }) => (folder ? `lib/${name}/index.ts` : `lib/${name}`))
        .filter((path) => layers.filter((layer) => layer.test(path)).length > 1);
      expect(doubled).toEqual([]);
    });
  });
});
