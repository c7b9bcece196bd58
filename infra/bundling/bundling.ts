import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { basename, dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { AssetHashType, DockerImage } from "aws-cdk-lib";
import { Code } from "aws-cdk-lib/aws-lambda";
import { build, type BuildOptions, type Metafile } from "esbuild";
import { moduleReplacements, runtimeProvidedSdk } from "./bundle-plugins.js";
import { DEFAULT_CORPUS_DIR } from "../../lib/tools/documents/local-document-index.js";
import { SQLITE_WASM_PACKAGE } from "../../lib/tools/sql/sqlite-wasm.js";
import { TOKENIZER_DATA_FILE } from "./cl100k-base.js";

/**
 * Optional dependencies of the mongodb driver, loaded with `require()` inside try/catch only when a
 * feature needs them (Kerberos, compression, client-side encryption, SOCKS, GCP), none installed or
 * needed here, so they stay out of the bundle. MONGODB-AWS (IAM) authentication needs `aws4`, a
 * dependency and so bundled, and `@aws-sdk/credential-providers`, which the Lambda Node.js runtime
 * provides (docs/deploying.md, "Passwords or IAM").
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

/** The files of SQLite's WebAssembly package that Node loads: its manifest, its Node entry, and the module beside it. */
const SQLITE_WASM_FILES = ["package.json", "dist/node.mjs", "dist/sqlite3.wasm"];

/**
 * Copies SQLite's WebAssembly package into `outdir/node_modules`, where the bundle resolves it at
 * run time (lib/tools/sql/sqlite-wasm.ts): query workers import it by path, so it stays a file
 * of its own rather than part of index.mjs, and only a bundle that uses SQLite carries it.
 */
export function writeSqliteWasm(outdir: string): void {
  const packageDir = dirname(createRequire(import.meta.url).resolve(`${SQLITE_WASM_PACKAGE}/package.json`));
  for (const file of SQLITE_WASM_FILES) {
    cpSync(join(packageDir, file), join(outdir, "node_modules", SQLITE_WASM_PACKAGE, file));
  }
}

/** Copies the handbook the local document index reads, to where the bundle's `DEFAULT_CORPUS_DIR` points. */
export function writeCorpus(outdir: string): void {
  cpSync(DEFAULT_CORPUS_DIR, join(outdir, basename(DEFAULT_CORPUS_DIR)), { recursive: true });
}

/** Whether a bundle contains this source module (a path relative to the project root). */
const bundles = (metafile: Metafile, module: string) => Object.keys(metafile.inputs).some((input) => input.endsWith(module));

/**
 * Bundles one handler into `outdir`: index.mjs, its source map and the tokenizer data, plus
 * SQLite's WebAssembly package and the handbook when the handler contains the local tools.
 */
export async function bundleFunction(entry: string, outdir: string): Promise<Metafile> {
  mkdirSync(outdir, { recursive: true });
  const result = await build({ ...bundleOptions(entry, join(outdir, BUNDLE_FILE)), metafile: true });
  await writeTokenizerData(outdir);
  if (bundles(result.metafile, "lib/tools/sql/sqlite-wasm.ts")) writeSqliteWasm(outdir);
  if (bundles(result.metafile, "lib/tools/documents/local-document-index.ts")) writeCorpus(outdir);
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
          execFileSync(process.execPath, ["--import", "tsx", BUNDLE_FUNCTION_SCRIPT, entry, outputDir], {
            cwd: PROJECT_ROOT,
            stdio: ["ignore", "inherit", "inherit"],
          });
          return true;
        },
      },
    },
  });
}
