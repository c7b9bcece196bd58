import { readFileSync } from "node:fs";
import semver from "semver";
import { describe, expect, it } from "vitest";

/** The Node.js these machines and CI run (`node --version`); Lambda runs 22. */
const NODE_20 = "20.20.2";

/**
 * Packages whose declared engines exclude Node 20 although the project runs them there, each with
 * why it is kept rather than replaced; `npm ci` prints one EBADENGINE warning (5 lines) for each.
 */
const KNOWN_ENGINE_EXCEPTIONS: Record<string, string> = {
  "@sqlite.org/sqlite-wasm":
    "declares node >=22 from 3.51.2-build4 on, but its Node entry (dist/node.mjs) uses nothing newer than Node 20 and " +
    "test/tools/sql runs it on 20; the last release without the field (3.51.1-build2) has another file layout, which the " +
    "Lambda bundles copy (infra/bundling), and an older SQLite",
};

interface Lock {
  packages: Record<string, { version?: string; engines?: { node?: string } | string[] }>;
}

/** What `npm ci` would warn about on `node`: the lock's packages whose `engines.node` that version does not satisfy. */
function engineMismatches(lock: Lock, node: string): { name: string; version: string; node: string }[] {
  return Object.entries(lock.packages).flatMap(([path, entry]) => {
    const range = Array.isArray(entry.engines) ? undefined : entry.engines?.node;
    if (path === "" || !range || semver.satisfies(node, range, { includePrerelease: true })) return [];
    return [{ name: path.replace(/^.*node_modules\//, ""), version: entry.version ?? "", node: range }];
  });
}

const lockOf = (file: string) => JSON.parse(readFileSync(new URL(file, import.meta.url), "utf8")) as Lock;

describe("npm ci on Node 20 prints no EBADENGINE warning beyond the documented ones", () => {
  it("finds no package in package-lock.json whose engines exclude Node 20, but the known exceptions", () => {
    const mismatches = engineMismatches(lockOf("../../package-lock.json"), NODE_20);
    expect(mismatches.filter((m) => !(m.name in KNOWN_ENGINE_EXCEPTIONS))).toEqual([]);
  });

  it("keeps no exception that is no longer needed", () => {
    const names = new Set(engineMismatches(lockOf("../../package-lock.json"), NODE_20).map((m) => m.name));
    for (const name of Object.keys(KNOWN_ENGINE_EXCEPTIONS)) expect(names, name).toContain(name);
  });

  it("reads engines as npm does: a range Node 20 misses is found, one it meets, a missing field or the legacy list form is not", () => {
    const lock: Lock = {
      packages: {
        "": { engines: { node: ">=22" } },
        "node_modules/openai": { version: "7.59.0", engines: { node: ">=22.0.0" } },
        "node_modules/a/node_modules/@babel/core": { version: "8.0.10", engines: { node: "^22.18.0 || >=24.11.0" } },
        "node_modules/@langchain/openai": { version: "1.5.8", engines: { node: ">=20" } },
        "node_modules/legacy": { version: "1.0.0", engines: ["node >= 0.8"] },
        "node_modules/none": { version: "1.0.0" },
      },
    };
    expect(engineMismatches(lock, NODE_20).map((m) => `${m.name}@${m.version}`)).toEqual(["openai@7.59.0", "@babel/core@8.0.10"]);
    expect(engineMismatches(lock, "22.23.5")).toEqual([]);
  });

  it("keeps Stryker (and its Babel 8, Node 22 only) out of the project's install: mutation/ installs it under Node 22", () => {
    const root = Object.keys(lockOf("../../package-lock.json").packages);
    expect(root.filter((p) => /node_modules\/@stryker-mutator\//.test(p))).toEqual([]);
    expect(Object.keys(lockOf("../../mutation/package-lock.json").packages)).toContain("node_modules/@stryker-mutator/core");
  });
});
