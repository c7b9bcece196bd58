import { fileURLToPath } from "node:url";
import { OutputFormat, type BundlingOptions } from "aws-cdk-lib/aws-lambda-nodejs";

/**
 * Optional dependencies of the mongodb driver, loaded with `require()` inside try/catch only when a
 * feature needs them (Kerberos, compression, client-side encryption, MONGODB-AWS auth, SOCKS, GCP).
 * None is installed or needed here, so they stay out of the bundle. `@aws-sdk/credential-providers`
 * is also provided by the Lambda Node.js runtime, so MONGODB-AWS auth still works if enabled.
 */
export const MONGODB_OPTIONAL_MODULES: readonly string[] = [
  "kerberos",
  "snappy",
  "@mongodb-js/zstd",
  "mongodb-client-encryption",
  "aws4",
  "gcp-metadata",
  "socks",
  "@aws-sdk/credential-providers",
];

/** esbuild target matching the Lambda runtime the stack pins. */
export const BUNDLE_TARGET = "node22";

/**
 * ESM output has no `require`; bundled CommonJS packages call it for Node built-ins (and the
 * driver for its optional modules), so the bundle gets a real one, scoped to the bundle.
 */
export const ESM_REQUIRE_BANNER =
  "import { createRequire as __threadwiseCreateRequire } from 'node:module'; const require = __threadwiseCreateRequire(import.meta.url);";

const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));

/** Packages replaced in the bundles by smaller modules of ours with the same exports (see each file). */
export const BUNDLE_ALIASES: Readonly<Record<string, string>> = {
  "whatwg-url": here("./whatwg-url.ts"),
  "js-tiktoken/ranks/cl100k_base": here("./cl100k-base.ts"),
};

/** Writes the data files the aliases read at run time into a bundle directory. */
export const WRITE_BUNDLE_DATA_SCRIPT = here("./write-tokenizer-data.mjs");

/**
 * How every function is bundled. The AWS SDK is bundled rather than taken from the runtime, so
 * the deployed code runs the SDK versions it was tested with (the runtime's copy lags and
 * changes under us); only the driver's optional modules are external.
 */
export const FUNCTION_BUNDLING: BundlingOptions = {
  format: OutputFormat.ESM,
  target: BUNDLE_TARGET,
  mainFields: ["module", "main"],
  minify: true,
  sourceMap: true,
  // The map is for stack traces (--enable-source-maps); the sources themselves are in git.
  sourcesContent: false,
  banner: ESM_REQUIRE_BANNER,
  externalModules: [...MONGODB_OPTIONAL_MODULES],
  esbuildArgs: Object.fromEntries(Object.entries(BUNDLE_ALIASES).map(([name, path]) => [`--alias:${name}`, path])),
  commandHooks: {
    beforeBundling: () => [],
    beforeInstall: () => [],
    afterBundling: (_inputDir: string, outputDir: string) => [`node "${WRITE_BUNDLE_DATA_SCRIPT}" "${outputDir}"`],
  },
};
