import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { Template } from "aws-cdk-lib/assertions";
import { ESM_REQUIRE_BANNER, MONGODB_OPTIONAL_MODULES } from "../../infra/bundling.js";
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

    it("returns a worker bundle that leaves the driver's optional modules to require() at run time", () => {
      const code = readFileSync(join(bundleDir("dev-threadwise-worker"), "index.mjs"), "utf8");
      // An external module stays a call on its bare name (esbuild renames `require`); a bundled one would be inlined.
      const required = MONGODB_OPTIONAL_MODULES.filter((name) => new RegExp(`[\\w$]+\\(["']${name.replace(/[/@.]/g, "\\$&")}["']\\)`).test(code));
      expect(required).toEqual(expect.arrayContaining(["kerberos", "snappy", "@mongodb-js/zstd", "mongodb-client-encryption"]));
    });
  });
});
