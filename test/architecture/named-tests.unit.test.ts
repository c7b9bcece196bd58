import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

/**
 * One test file per module with logic, found in one hop (README, "Tests"): `lib/<path>/<name>.ts`
 * is tested by `test/<path>/<name>.test.ts`, or by `test/<path>/<name>.<aspect>.test.ts` when its
 * tests are split by aspect (`build-model-view.property.test.ts`). A module has logic when it
 * declares a function, a method, a class or runs a statement; a file of re-exports only (the
 * folders' `index.ts`) and a module of types and constants have none, and need no test.
 */

const ROOT = resolve(import.meta.dirname, "../..");

/**
 * The modules of types and constants, each with why it needs no test of its own. The test below
 * checks that none of them has logic, so an entry cannot hide a function that lacks a test.
 */
const TYPES_AND_CONSTANTS: Record<string, string> = {
  "lib/agent/fault-points.ts": "the names of the points a fault injector may fire at, and its interface",
  "lib/agent/system-prompt.ts": "the default system prompt's text",
  "lib/agent/tool-runner.ts": "the interface the graph runs tools through; its implementation is registry-tool-runner.ts",
  "lib/config/user-pool.ts": "the names the stack's Cognito user pool and npm run token agree on; test/infra/api-user-pool.test.ts checks them",
  "lib/model-view/converse-rules.ts": "the names of the Converse rules a view must satisfy",
  "lib/model-view/types.ts": "the view's input, output and statistics types",
  "lib/observability/approval-sweep-metrics.ts": "the approvals sweep's metric names",
  "lib/api/admin-schemas.ts": "the admin API's request and response schemas (zod), checked through the admin routes' tests",
  "lib/api/lifecycle-schemas.ts": "erasure, export and audit log schemas (zod), checked through test/api/lifecycle-routes.test.ts",
  "lib/api/content-key-schemas.ts": "the content-key routes' schemas (zod), checked through test/api/content-key-routes.test.ts",
  "lib/api/member-schemas.ts": "a conversation's members' schemas (zod), checked through test/api/member-routes.test.ts",
  "lib/mcp/oauth/data-key-source.ts": "the interface of envelope encryption's data key sources (KMS, the local key file)",
  "lib/mcp/oauth/mcp-oauth-types.ts": "the MCP server entry as the OAuth side reads it, and a pending sign-in's shape",
  "lib/api/mcp-schemas.ts": "the MCP endpoint's and the OAuth callback's schemas (zod), checked through test/api/mcp-routes.test.ts",
  "lib/observability/limit-metrics.ts": "the limits' usage metric names and the tenant property",
  "lib/observability/mcp-metrics.ts": "the MCP client's metric names and properties",
  "lib/store/collections.ts": "the MongoDB collection names",
  "lib/store/migrations/migration.ts": "the interface of a numbered migration; the runner's test runs migrations through it",
  "lib/mcp/mcp-oauth-provider.ts": "the interfaces of the per-user OAuth provider the MCP client is given and of its factory",
  "lib/tools/documents/document-retriever.ts": "the interface of a document search and its passage type",
  "lib/tools/sample-questions.ts": "the sample questions' text; test/tools/local-model-examples.test.ts runs each through the offline model",
  "lib/tools/secrets.ts": "the interface tools read credentials through",
  "lib/tools/tool.ts": "the interface of a tool and of the context a call runs with",
};

function libModules(dir = join(ROOT, "lib")): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return libModules(path);
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts") ? [relative(ROOT, path)] : [];
  });
}

function testFiles(dir = join(ROOT, "test")): Set<string> {
  return new Set(
    readdirSync(dir, { withFileTypes: true, recursive: true })
      .filter((entry) => entry.isFile() && entry.name.endsWith(".test.ts"))
      .map((entry) => relative(ROOT, join(entry.parentPath, entry.name))),
  );
}

/** Whether the source declares a function, method or class, or runs a statement of its own (a script). */
function hasLogic(source: string): boolean {
  const file = ts.createSourceFile("module.ts", source, ts.ScriptTarget.Latest, true);
  const runs = file.statements.some(
    (s) =>
      !ts.isImportDeclaration(s) &&
      !ts.isExportDeclaration(s) &&
      !ts.isInterfaceDeclaration(s) &&
      !ts.isTypeAliasDeclaration(s) &&
      !ts.isVariableStatement(s) &&
      !ts.isModuleDeclaration(s),
  );
  const declares = (node: ts.Node): boolean =>
    ts.isFunctionLike(node) && !ts.isFunctionTypeNode(node) && !ts.isMethodSignature(node)
      ? "body" in node && node.body !== undefined
      : ts.isClassLike(node) || ts.forEachChild(node, declares) === true;
  return runs || declares(file);
}

/** Whether the source only re-exports other modules (a folder's `index.ts`). */
function onlyReexports(source: string): boolean {
  const file = ts.createSourceFile("module.ts", source, ts.ScriptTarget.Latest, true);
  return file.statements.every((s) => ts.isImportDeclaration(s) || (ts.isExportDeclaration(s) && s.moduleSpecifier !== undefined));
}

/** The test files a module's tests may live in: its own name, or its name and an aspect. */
function namedTests(module: string, tests: Set<string>): string[] {
  const stem = module.replace(/^lib\//, "test/").replace(/\.ts$/, "");
  return [...tests].filter((t) => t === `${stem}.test.ts` || (t.startsWith(`${stem}.`) && t.endsWith(".test.ts")));
}

function modulesWithLogic(): string[] {
  return libModules().filter((m) => hasLogic(readFileSync(join(ROOT, m), "utf8")));
}

describe("named tests", () => {
  describe("hasLogic", () => {
    it("returns false for types, interfaces (with method signatures), constants and re-exports", () => {
      const source = [
        'export { a } from "./a.js";',
        'import type { B } from "./b.js";',
        "export interface Runner { run(x: B): Promise<void>; }",
        "export type F = (x: number) => string;",
        'export const NAMES = ["a", "b"].join(" ");',
      ].join("\n");
      expect(hasLogic(source)).toBe(false);
    });

    it("returns true for a function, an arrow function in a constant, a class, or a top-level statement", () => {
      expect(hasLogic("export function f(): number { return 1; }")).toBe(true);
      expect(hasLogic("export const logger = { info: (m: string) => console.log(m) };")).toBe(true);
      expect(hasLogic("export class Store {}")).toBe(true);
      expect(hasLogic('console.log("script");')).toBe(true);
    });
  });

  describe("the repository", () => {
    it("returns a same-named test file for every lib module with logic", () => {
      const tests = testFiles();
      const missing = modulesWithLogic().filter((m) => namedTests(m, tests).length === 0);
      expect(missing).toEqual([]);
    });

    it("returns every module without logic (re-exports aside) in the list of types and constants, and nothing else there", () => {
      const withoutLogic = libModules().filter((m) => {
        const source = readFileSync(join(ROOT, m), "utf8");
        return !hasLogic(source) && !onlyReexports(source);
      });
      expect(withoutLogic.sort()).toEqual(Object.keys(TYPES_AND_CONSTANTS).sort());
    });
  });
});
