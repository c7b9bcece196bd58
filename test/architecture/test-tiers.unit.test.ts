import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

/**
 * The unit tier starts nothing (docs/testing.md, "Tiers"): a `*.unit.test.ts` file, and every
 * test-side module it imports (test/support/…), neither opens the database, builds the app, starts
 * a child process nor a server. Each is recognised by what the module imports or calls; `import
 * type` is no start. vitest.config.ts gives the unit tier no database and test/support/unit-tier.ts
 * makes a server or a child process throw at run time; this check also holds in `npm test`, where
 * the integration tier's database is there.
 */

const ROOT = resolve(import.meta.dirname, "../..");

/** Modules whose import means a start, with what they start. */
const STARTS: Record<string, string> = {
  mongodb: "the database driver",
  "mongodb-v5": "the database driver",
  "node:child_process": "a child process",
  child_process: "a child process",
  "lib/app.ts": "the app",
  "lib/local/local-server.ts": "the app (the local server)",
  "lib/local/embedded-mongo.ts": "the embedded database",
  "test/support/global-setup.ts": "the embedded database",
  "test/support/mongo.ts": "the database",
  "test/support/store-fixture.ts": "the database",
};

/** The calls that start a server: `createServer(…)` (node:http, https, net) and `….listen(…)`. */
const SERVER_CALLS = new Set(["createServer", "listen"]);

/** What a source does at run time that matters to its tier. */
interface ModuleUse {
  /** The modules it imports at run time (value imports, re-exports and `import()`), as written. */
  imports: string[];
  /** Whether it calls `createServer` or `listen`. */
  startsServer: boolean;
}

function moduleUse(source: string): ModuleUse {
  const file = ts.createSourceFile("module.ts", source, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  let startsServer = false;
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && !node.importClause?.isTypeOnly && ts.isStringLiteral(node.moduleSpecifier)) {
      const bindings = node.importClause?.namedBindings;
      const typesOnly =
        !node.importClause?.name &&
        bindings !== undefined &&
        ts.isNamedImports(bindings) &&
        bindings.elements.length > 0 &&
        bindings.elements.every((e) => e.isTypeOnly);
      if (!typesOnly) found.push(node.moduleSpecifier.text);
    } else if (ts.isExportDeclaration(node) && !node.isTypeOnly && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      found.push(node.moduleSpecifier.text);
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      found.push(node.arguments[0].text);
    } else if (ts.isCallExpression(node)) {
      const callee = ts.isPropertyAccessExpression(node.expression) ? node.expression.name : node.expression;
      if (ts.isIdentifier(callee) && SERVER_CALLS.has(callee.text)) startsServer = true;
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return { imports: found, startsServer };
}

/** A relative specifier from `from` as a repository path (`.js` written for a `.ts` file). */
function resolveSpecifier(from: string, specifier: string): string {
  if (!specifier.startsWith(".")) return specifier;
  return relative(ROOT, resolve(ROOT, dirname(from), specifier)).replace(/[.]js$/, ".ts");
}

/**
 * What a test file starts, each as "<what> (<module path>)": through its own imports and calls and
 * those of the test-side modules it reaches (test/…). `read` returns a repository file's text or
 * undefined.
 */
function startsOf(file: string, read: (path: string) => string | undefined): string[] {
  const starts = new Set<string>();
  const seen = new Set<string>();
  const through = (between: string[]) => (between.length > 0 ? `, through ${between.join(" → ")}` : "");
  /** `between`: the modules imported on the way from the test file to `path`, both excluded. */
  const walk = (path: string, between: string[]): void => {
    if (seen.has(path)) return;
    seen.add(path);
    const source = read(path);
    if (source === undefined) return;
    const use = moduleUse(source);
    if (use.startsServer) starts.add(`a server (${path}${through(between)})`);
    const onward = path === file ? [] : [...between, path];
    for (const specifier of use.imports) {
      const target = resolveSpecifier(path, specifier);
      if (STARTS[target]) starts.add(`${STARTS[target]} (${target}${through(onward)})`);
      if (target.startsWith("test/")) walk(target, onward);
    }
  };
  walk(file, []);
  return [...starts].sort();
}

function unitFiles(): string[] {
  return readdirSync(join(ROOT, "test"), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".unit.test.ts"))
    .map((entry) => relative(ROOT, join(entry.parentPath, entry.name)))
    .sort();
}

function readRepositoryFile(path: string): string | undefined {
  const absolute = join(ROOT, path);
  return existsSync(absolute) ? readFileSync(absolute, "utf8") : undefined;
}

describe("test tiers", () => {
  describe("moduleUse", () => {
    it("returns value imports, re-exports and import() calls, and no type-only import", () => {
      const source = [
        'import { MongoClient } from "mongodb";',
        'import type { Db } from "mongodb-v5";',
        'import { type Collection } from "mongodb-v5";',
        'import { a, type B } from "./a.js";',
        'export { c } from "./c.js";',
        'export type { D } from "./d.js";',
        'const e = await import("./e.js");',
      ].join("\n");
      expect(moduleUse(source)).toEqual({ imports: ["mongodb", "./a.js", "./c.js", "./e.js"], startsServer: false });
    });

    it("returns a server for a call of createServer or listen, not for the words in a string", () => {
      expect(moduleUse("http.createServer(handler);").startsServer).toBe(true);
      expect(moduleUse("server.listen(0);").startsServer).toBe(true);
      expect(moduleUse('const text = "createServer(), .listen()";').startsServer).toBe(false);
    });
  });

  describe("startsOf", () => {
    const files: Record<string, string> = {
      "test/x/pure.unit.test.ts": 'import { a } from "../support/helper.js";\nimport type { Db } from "mongodb";\n',
      "test/x/db.unit.test.ts": 'import { useTestDatabase } from "../support/store-fixture.js";\n',
      "test/x/indirect.unit.test.ts": 'import { start } from "../support/endpoint.js";\n',
      "test/x/app.unit.test.ts": 'import { createApp } from "../../lib/app.js";\n',
      "test/x/spawns.unit.test.ts": 'import { execFile } from "node:child_process";\n',
      "test/support/helper.ts": "export const a = 1;\n",
      "test/support/store-fixture.ts": 'import { testDatabase } from "./mongo.js";\n',
      "test/support/mongo.ts": 'import { MongoClient } from "mongodb";\n',
      "test/support/endpoint.ts": 'import { createServer } from "node:http";\nexport const start = () => createServer().listen(0);\n',
    };
    const read = (path: string) => files[path];

    it("returns nothing for a file whose imports start nothing (a type from the driver included)", () => {
      expect(startsOf("test/x/pure.unit.test.ts", read)).toEqual([]);
    });

    it("returns the database for a file that imports the database fixture", () => {
      expect(startsOf("test/x/db.unit.test.ts", read)).toContain("the database (test/support/store-fixture.ts)");
    });

    it("returns a server started by a support module the file imports", () => {
      expect(startsOf("test/x/indirect.unit.test.ts", read)).toEqual(["a server (test/support/endpoint.ts)"]);
    });

    it("returns the app and a child process for the files that import them", () => {
      expect(startsOf("test/x/app.unit.test.ts", read)).toEqual(["the app (lib/app.ts)"]);
      expect(startsOf("test/x/spawns.unit.test.ts", read)).toEqual(["a child process (node:child_process)"]);
    });
  });

  describe("the repository", () => {
    it("returns no unit file that starts the database, the app, a child process or a server", () => {
      const starting = unitFiles().flatMap((file) => startsOf(file, readRepositoryFile).map((start) => `${file}: ${start}`));
      expect(starting).toEqual([]);
    });

    it("returns unit files in the unit tier of vitest.config.ts and the tier's scripts in package.json", () => {
      const config = readFileSync(join(ROOT, "vitest.config.ts"), "utf8");
      expect(config).toContain('UNIT_FILES = ["test/**/*.unit.test.ts"]');
      const scripts = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts;
      expect(scripts["test:unit"]).toBe("vitest run --project unit-sequential --project unit");
      expect(scripts["test:integration"]).toBe("vitest run --project integration-sequential --project integration");
      expect(unitFiles().length).toBeGreaterThan(100);
    });
  });
});
