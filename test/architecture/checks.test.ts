import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * `npm test` runs `npm run lint` (Biome, then dependency-cruiser over lib/, functions/ and infra/)
 * before vitest. These tests show that each check fails on a deliberate violation: the house's
 * own configuration files run on a small tree of files written for the purpose.
 */

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, "../..");
const BIN = join(ROOT, "node_modules/.bin");

let tree: string;

async function write(files: Record<string, string>): Promise<void> {
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(tree, path)), { recursive: true });
    await writeFile(join(tree, path), text);
  }
}

async function exitCode(command: string, args: string[]): Promise<{ code: number; stdout: string }> {
  try {
    const { stdout } = await run(join(BIN, command), args, { cwd: tree, maxBuffer: 16 * 1024 * 1024 });
    return { code: 0, stdout };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string };
    return { code: failed.code ?? 1, stdout: failed.stdout ?? "" };
  }
}

beforeAll(async () => {
  tree = await mkdtemp(join(tmpdir(), "threadwise-house-"));
  await symlink(join(ROOT, "node_modules"), join(tree, "node_modules"));
  const biome = JSON.parse(await readFile(join(ROOT, "biome.json"), "utf8")) as Record<string, unknown>;
  delete biome.vcs;
  biome.$schema = undefined;
  await write({
    "biome.json": JSON.stringify(biome),
    "tsconfig.json": await readFile(join(ROOT, "tsconfig.json"), "utf8"),
  });
});
afterAll(() => rm(tree, { recursive: true, force: true }));

describe("house checks", () => {
  describe("biome", () => {
    it("returns success for a file in the house style", async () => {
      await write({ "clean/ok.ts": "export const answer = (text: string): string => text.trim();\n" });
      expect((await exitCode("biome", ["check", "--error-on-warnings", "clean"])).code).toBe(0);
    });

    it("fails on a file the formatter would change", async () => {
      await write({ "format/bad.ts": "export   const answer = ( text:string ) => text.trim()\n" });
      expect((await exitCode("biome", ["check", "--error-on-warnings", "format"])).code).not.toBe(0);
    });

    it("fails on a lint violation (an explicit any in lib/)", async () => {
      await write({ "lint/lib/bad.ts": "export const answer = (text: any): string => text;\n" });
      expect((await exitCode("biome", ["check", "--error-on-warnings", "lint"])).code).not.toBe(0);
    });
  });

  describe("dependency-cruiser", () => {
    it("returns each rule a deliberate violation breaks, and nothing for an import that runs downward", async () => {
      await write({
        // Allowed: the channels sit above the queue.
        "lib/channels/ok.ts": 'import { job } from "../queue/job.js";\nexport const channel = job;\n',
        "lib/queue/job.ts": "export const job = 1;\n",
        // model-view-is-pure (and the layer rule of its layer)
        "lib/model-view/impure.ts": 'import { stored } from "../store/stored.js";\nexport const view = stored;\n',
        "lib/store/stored.ts": "export const stored = 1;\n",
        // layer-queue: the queue imports the channels above it
        "lib/queue/upward.ts": 'import type { channel } from "../channels/ok.js";\nexport type Up = typeof channel;\n',
        // no-lambda-types-in-lib
        "lib/lambda.ts": 'import type { Context } from "aws-lambda";\nexport type C = Context;\n',
        // lib-below-adapters
        "lib/adapter.ts": 'import { handler } from "../functions/handler.js";\nexport const h = handler;\n',
        "functions/handler.ts": "export const handler = 1;\n",
        // infra-uses-config-only
        "infra/stack.ts": 'import { stored } from "../lib/store/stored.js";\nexport const s = stored;\n',
        // no-circular
        "lib/store/a.ts": 'import { b } from "./b.js";\nexport const a = () => b;\n',
        "lib/store/b.ts": 'import { a } from "./a.js";\nexport const b = () => a;\n',
      });
      const args = ["lib", "functions", "infra", "--config", join(ROOT, ".dependency-cruiser.cjs")];
      expect((await exitCode("depcruise", args)).code).not.toBe(0);
      const { stdout } = await exitCode("depcruise", [...args, "-T", "json"]);
      const violations = (JSON.parse(stdout) as { summary: { violations: { from: string; to: string; rule: { name: string } }[] } }).summary.violations;
      const broken = (from: string) => violations.filter((v) => v.from === from).map((v) => v.rule.name);
      expect(broken("lib/channels/ok.ts")).toEqual([]);
      expect(broken("lib/model-view/impure.ts")).toContain("model-view-is-pure");
      expect(broken("lib/queue/upward.ts")).toContain("layer-queue");
      expect(broken("lib/lambda.ts")).toContain("no-lambda-types-in-lib");
      expect(broken("lib/adapter.ts")).toContain("lib-below-adapters");
      expect(broken("infra/stack.ts")).toContain("infra-uses-config-only");
      expect(broken("lib/store/a.ts")).toContain("no-circular");
    });
  });
});
