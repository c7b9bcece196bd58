import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { AssetHashType, DockerImage } from "aws-cdk-lib";
import { Code } from "aws-cdk-lib/aws-lambda";
import { build, type BuildOptions, type Metafile } from "esbuild";
import { moduleReplacements, runtimeProvidedSdk } from "./bundle-plugins.js";
import { TOKENIZER_DATA_FILE } from "./cl100k-base.js";

/**
 * Optional dependencies of the mongodb driver, loaded with `require()` inside try/catch only when a
 * feature needs them (Kerberos, compression, client-side encryption, SOCKS, GCP), none installed or
 * needed here, so they stay out of the bundle. MONGODB-AWS (IAM) authentication needs `aws4`, a
 * dependency and so bundled, and `@aws-sdk/credential-providers`, which the Lambda Node.js runtime
 * provides (README, "Passwords or IAM").
 */
export const MONGODB_OPTIONAL_MODULES: readonly string[] = [
  "kerberos",
  "snappy",
  "@mongodb-js/zstd",
  "mongodb-client-encryption",
  "gcp-metadata",
  "socks",
  "@aws-sdk/credential-providers",
];

/** esbuild target matching the Lambda runtime the stack pins. */
export const BUNDLE_TARGET = "node22";

/** The handler file in each bundle directory (`index.handler`). */
export const BUNDLE_FILE = "index.mjs";

/**
 * ESM output has no `require`; bundled CommonJS packages call it for Node built-ins (and the
 * driver for its optional modules, and the bundle for the runtime's AWS SDK), so the bundle gets
 * a real one, scoped to the bundle.
 */
export const ESM_REQUIRE_BANNER =
  "import { createRequire as __threadwiseCreateRequire } from 'node:module'; const require = __threadwiseCreateRequire(import.meta.url);";

const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));

/** The directory CDK bundles from: the repository root, with package.json and node_modules. */
export const PROJECT_ROOT = here("../..");

/** Packages replaced in the bundles by smaller modules of ours with the same exports (see each file). */
export const BUNDLE_ALIASES: Readonly<Record<string, string>> = {
  "whatwg-url": here("./whatwg-url.ts"),
  "js-tiktoken/ranks/cl100k_base": here("./cl100k-base.ts"),
};

/**
 * How every function is bundled, as esbuild options. The AWS SDK v3 comes from the Lambda Node.js
 * runtime (it ships the whole SDK; see bundle-plugins.ts): the deployed SDK version is the
 * runtime's, which AWS updates, not the lockfile's. The plugins need esbuild's API, which is why
 * the stack does not use NodejsFunction's own (command-line) bundling.
 */
export function bundleOptions(entry: string, outfile: string): BuildOptions {
  return {
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    target: BUNDLE_TARGET,
    mainFields: ["module", "main"],
    minify: true,
    sourcemap: true,
    // The map is for stack traces (--enable-source-maps); the sources themselves are in git.
    sourcesContent: false,
    banner: { js: ESM_REQUIRE_BANNER },
    external: [...MONGODB_OPTIONAL_MODULES],
    alias: { ...BUNDLE_ALIASES },
    plugins: [runtimeProvidedSdk, moduleReplacements],
    logLevel: "error",
  };
}

/** Writes js-tiktoken's cl100k_base ranks as JSON into a bundle directory, where cl100k-base.ts reads them. */
export async function writeTokenizerData(outdir: string): Promise<void> {
  const { default: ranks } = await import("js-tiktoken/ranks/cl100k_base");
  writeFileSync(join(outdir, TOKENIZER_DATA_FILE), JSON.stringify(ranks));
}

/** Bundles one handler into `outdir` (index.mjs, its source map and the tokenizer data). */
export async function bundleFunction(entry: string, outdir: string): Promise<Metafile> {
  mkdirSync(outdir, { recursive: true });
  const result = await build({ ...bundleOptions(entry, join(outdir, BUNDLE_FILE)), metafile: true });
  await writeTokenizerData(outdir);
  return result.metafile;
}

/** Runs `bundleFunction` in a child process: CDK bundles synchronously, esbuild plugins need the async API. */
export const BUNDLE_FUNCTION_SCRIPT = here("./bundle-function.ts");

/** Image for CDK's Docker fallback, which runs the same script inside it. */
export const BUNDLING_IMAGE = "public.ecr.aws/sam/build-nodejs22.x";

/** The code asset of a function: its handler bundled by `bundleFunction`, hashed by output. */
export function functionCode(entry: string): Code {
  const relativeEntry = relative(PROJECT_ROOT, entry);
  return Code.fromAsset(PROJECT_ROOT, {
    assetHashType: AssetHashType.OUTPUT,
    bundling: {
      image: DockerImage.fromRegistry(BUNDLING_IMAGE),
      command: ["bash", "-c", `npx tsx ${relative(PROJECT_ROOT, BUNDLE_FUNCTION_SCRIPT)} ${relativeEntry} /asset-output`],
      local: {
        tryBundle(outputDir: string): boolean {
          execFileSync(process.execPath, ["--import", "tsx", BUNDLE_FUNCTION_SCRIPT, entry, outputDir], { cwd: PROJECT_ROOT, stdio: ["ignore", "inherit", "inherit"] });
          return true;
        },
      },
    },
  });
}
