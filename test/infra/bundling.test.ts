import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { Template } from "aws-cdk-lib/assertions";
import { build } from "esbuild";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { execFileSync } from "node:child_process";
import { pathToFileURL } from "node:url";
import {
  BUNDLE_ALIASES,
  BUNDLE_TARGET,
  ESM_REQUIRE_BANNER,
  MONGODB_OPTIONAL_MODULES,
  WRITE_BUNDLE_DATA_SCRIPT,
} from "../../infra/bundling/bundling.js";
import { TOKENIZER_DATA_FILE } from "../../infra/bundling/cl100k-base.js";
import { countTextTokens } from "../../lib/model-view/token-counter.js";
import { buildStack } from "./synth.js";

describe("ThreadwiseStack bundling", () => {
  // One synth with real esbuild bundling (local, no Docker), shared by the tests below.
  const { app, stack } = buildStack({ bundle: true });
  const template = Template.fromStack(stack);
  const assemblyDir = app.synth().directory;

  /** The bundle directory of the function with this name, found through its S3 key (the asset hash). */
  function bundleDir(functionName: string): string {
    const [fn] = Object.values(template.findResources("AWS::Lambda::Function", { Properties: { FunctionName: functionName } }));
    const key = fn.Properties.Code.S3Key as string;
    return join(assemblyDir, `asset.${key.replace(/\.zip$/, "")}`);
  }

  describe("NodejsFunction assets", () => {
    it.each(["api", "worker", "slack", "teams"])("returns an ESM bundle with a source map for %s", (name) => {
      const dir = bundleDir(`dev-threadwise-${name}`);
      const code = readFileSync(join(dir, "index.mjs"), "utf8");
      expect(code.startsWith(ESM_REQUIRE_BANNER)).toBe(true);
      expect(/export\s*\{[^}]*\bas handler\b|export\s*\{[^}]*\bhandler\b/.test(code)).toBe(true);
      expect(existsSync(join(dir, "index.mjs.map"))).toBe(true);
      expect(statSync(join(dir, "index.mjs")).size).toBeGreaterThan(0);
    });

    it("returns the worker's tokenizer ranks as a data file beside the bundle, not inside it", () => {
      const dir = bundleDir("dev-threadwise-worker");
      const ranks = JSON.parse(readFileSync(join(dir, TOKENIZER_DATA_FILE), "utf8")) as { bpe_ranks: string };
      expect(ranks.bpe_ranks.length).toBeGreaterThan(500_000);
      expect(readFileSync(join(dir, "index.mjs"), "utf8").includes(ranks.bpe_ranks.slice(0, 200))).toBe(false);
    });

    it("returns a worker bundle that leaves the driver's optional modules to require() at run time", () => {
      const code = readFileSync(join(bundleDir("dev-threadwise-worker"), "index.mjs"), "utf8");
      // An external module stays a call on its bare name (esbuild renames `require`); a bundled one would be inlined.
      const required = MONGODB_OPTIONAL_MODULES.filter((name) => new RegExp(`[\\w$]+\\(["']${name.replace(/[/@.]/g, "\\$&")}["']\\)`).test(code));
      expect(required).toEqual(expect.arrayContaining(["kerberos", "snappy", "@mongodb-js/zstd", "mongodb-client-encryption"]));
    });
  });

  describe("BUNDLE_ALIASES", () => {
    it("returns the same token counts from a bundle as from the source", async () => {
      const dir = mkdtempSync(join(tmpdir(), "tw-bundle-"));
      await build({
        entryPoints: [new URL("../../lib/model-view/token-counter.ts", import.meta.url).pathname],
        outfile: join(dir, "index.mjs"),
        bundle: true,
        platform: "node",
        format: "esm",
        target: BUNDLE_TARGET,
        banner: { js: ESM_REQUIRE_BANNER },
        alias: { ...BUNDLE_ALIASES },
        logLevel: "silent",
      });
      execFileSync(process.execPath, [WRITE_BUNDLE_DATA_SCRIPT, dir]);
      const bundled = (await import(pathToFileURL(join(dir, "index.mjs")).href)) as { countTextTokens(text: string): number };
      const text = "Threadwise keeps durable state and sends only what helps answer. Ünïcödé, code `x => x + 1`.";
      expect(bundled.countTextTokens(text)).toBe(countTextTokens(text));
    });
  });
});
