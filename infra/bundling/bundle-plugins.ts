import type { Plugin } from "esbuild";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";

const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));

/**
 * Packages the Lambda Node.js runtime provides (the full AWS SDK for JavaScript v3, and the Smithy
 * packages it is built on), left out of the bundles.
 */
export const RUNTIME_PROVIDED_MODULES: readonly RegExp[] = [/^@aws-sdk\//, /^@smithy\//];

/**
 * Smithy packages bundled all the same: the X-Ray SDK needs `@smithy/service-error-classification`
 * 2.x, which the SDK v3 no longer depends on, so the runtime need not have it (the artifact tier,
 * with only the SDK's own closure on NODE_PATH, failed to load without it).
 */
export const BUNDLED_SMITHY_PACKAGES: ReadonlySet<string> = new Set(["@smithy/service-error-classification"]);

const RUNTIME_NAMESPACE = "threadwise-runtime-require";

/**
 * Loads the runtime's AWS SDK with `require()`, also where our code and LangChain `import` it. The
 * runtime's copy is found through NODE_PATH, which only CommonJS resolution reads, and each package's
 * CommonJS build is one file where its ESM build is dozens: importing the same clients as ESM from
 * node_modules took ~100 ms more CPU on this machine.
 */
export const runtimeProvidedSdk: Plugin = {
  name: "threadwise-runtime-provided-sdk",
  setup(build) {
    for (const filter of RUNTIME_PROVIDED_MODULES) {
      build.onResolve({ filter }, (args) => {
        // Undefined: esbuild resolves and bundles it as any other package.
        if (BUNDLED_SMITHY_PACKAGES.has(args.path.split("/").slice(0, 2).join("/"))) return undefined;
        return args.namespace === RUNTIME_NAMESPACE || args.kind === "require-call"
          ? { path: args.path, external: true }
          : { path: args.path, namespace: RUNTIME_NAMESPACE };
      });
    }
    build.onLoad({ filter: /.*/, namespace: RUNTIME_NAMESPACE }, (args) => ({
      contents: `module.exports = require(${JSON.stringify(args.path)});`,
      loader: "js",
    }));
  },
};

/** What the AWS Encryption SDK's signature helpers do in the bundles: refuse, saying why. */
const SIGNATURES_LEFT_OUT = 'throw new Error("ECDSA-signed Encryption SDK messages are left out of the Lambda bundles (contents are written unsigned)");';

/** A module inside a package, imported by a relative path, that the bundles take from infra/bundling instead. */
export interface ModuleReplacement {
  /** The import path exactly as the package writes it. */
  importPath: string;
  /** Matches the importing file, so only that package's import is replaced. */
  importer: RegExp;
  /** Our module with the same exports, or its source when it is one line (resolved beside the module it replaces). */
  replacement: { file: string } | { contents: string };
}

/**
 * Modules replaced by smaller ones of ours with the same exports (each file says why it is safe).
 * esbuild's `alias` only sees bare package names; these are relative imports inside packages.
 */
export const MODULE_REPLACEMENTS: readonly ModuleReplacement[] = [
  { importPath: "../locales/index.js", importer: /[\\/]zod[\\/]v4[\\/](core|classic|mini)[\\/]/, replacement: { file: here("./zod-locales.ts") } },
  { importPath: "./compile.js", importer: /[\\/]zod[\\/]v4[\\/]core[\\/]index\.js$/, replacement: { file: here("./zod-compile.ts") } },
  {
    importPath: "./import_map.js",
    importer: /[\\/]@langchain[\\/]core[\\/]dist[\\/]load[\\/]index\.js$/,
    replacement: { file: here("./langchain-import-map.ts") },
  },
  {
    importPath: "../utils/sax-js/sax.js",
    importer: /[\\/]@langchain[\\/]core[\\/]dist[\\/]output_parsers[\\/]xml\.js$/,
    replacement: { file: here("./langchain-sax.ts") },
  },
  { importPath: "./client.mjs", importer: /[\\/]langsmith[\\/]lib[\\/]run_trees\.mjs$/, replacement: { file: here("./langsmith-client.ts") } },
  // The package root re-exports the generated REST client too; LangChain only takes these two names from it.
  { importPath: "langsmith", importer: /[\\/]@langchain[\\/]core[\\/]dist[\\/]/, replacement: { file: here("./langsmith.ts") } },
  // The driver's index exports GridFS, which nothing here uses (the worker was over 1.5 MB with it).
  ...["./gridfs", "./gridfs/download", "./gridfs/upload"].map((importPath) => ({
    importPath,
    importer: /[\\/]mongodb[\\/]lib[\\/]index\.js$/,
    replacement: { file: here("./mongodb-gridfs.ts") },
  })),
  // The package root also exports the Kendra and knowledge-base retrievers and embeddings, whose SDK
  // clients would be loaded at start for nothing (~8 ms for Kendra's alone); we use the chat model.
  { importPath: "@langchain/aws", importer: /[\\/]lib[\\/]agent[\\/]/, replacement: { contents: 'export { ChatBedrockConverse } from "./chat_models.js";' } },
  // The MCP client passes its own JSON Schema validator (zod's), so the SDK's default Ajv is not needed.
  {
    importPath: "../validation/ajv-provider.js",
    importer: /[\\/]@modelcontextprotocol[\\/]sdk[\\/]dist[\\/]esm[\\/]client[\\/]index\.js$/,
    replacement: { file: here("./mcp-ajv-provider.ts") },
  },
  // The OpenAI-compatible provider is the local server's; deployed functions call Bedrock.
  {
    importPath: "./openai-compatible-model.js",
    importer: /[\\/]lib[\\/]agent[\\/]chat-model\.ts$/,
    replacement: { file: here("./openai-compatible-model.ts") },
  },
  // The MCP SDK server's default Ajv validator, used only for elicitation answers, which the MCP endpoint never asks.
  {
    importPath: "../validation/ajv-provider.js",
    importer: /[\\/]@modelcontextprotocol[\\/]sdk[\\/]dist[\\/]esm[\\/]server[\\/]index\.js$/,
    replacement: { file: here("./mcp-server-ajv-provider.ts") },
  },
  // The MCP SDK's converter for zod 3 schemas (zod-to-json-schema, 21 KB): our tools' schemas are zod 4, which the SDK
  // converts with zod's own `toJSONSchema`; only a zod 3 schema would reach it, and it throws saying so.
  {
    importPath: "zod-to-json-schema",
    importer: /[\\/]@modelcontextprotocol[\\/]sdk[\\/]dist[\\/]esm[\\/]server[\\/]zod-json-schema-compat\.js$/,
    replacement: { contents: 'export function zodToJsonSchema() { throw new Error("zod 3 schemas are left out of the Lambda bundles"); }' },
  },
  // LangSmith's environment helpers take only its version from the package index, which imports the tracing client.
  {
    importPath: "../index.mjs",
    importer: /[\\/]langsmith[\\/]lib[\\/]utils[\\/]env\.mjs$/,
    replacement: { contents: 'export { VERSION as __version__ } from "../version.mjs";' },
  },
  // The AWS Encryption SDK (lib/crypto/field-cipher.ts) writes with a suite that has no ECDSA signature and reads only
  // what it wrote (commitment policy REQUIRE_ENCRYPT_REQUIRE_DECRYPT, the same suite): its signature helpers (bn.js's
  // curve arithmetic, asn1.js's DER and PEM, 113 KB) are left out, and a signed message throws saying so.
  ...(["./ecc_encode", "./ecc_decode"] as const).map((importPath) => ({
    importPath,
    importer: /[\\/]@aws-crypto[\\/]material-management[\\/]build[\\/]module[\\/]src[\\/]signature_key\.js$/,
    replacement: {
      contents: `export const ${importPath === "./ecc_encode" ? "encode" : "decode"}NamedCurves = new Proxy({}, { get() { ${SIGNATURES_LEFT_OUT} } });`,
    },
  })),
  {
    importPath: "./pem_helpers",
    importer: /[\\/]@aws-crypto[\\/]material-management[\\/]build[\\/]module[\\/]src[\\/]signature_key\.js$/,
    replacement: { contents: `export function publicKeyPem() { ${SIGNATURES_LEFT_OUT} } export function privateKeyPem() { ${SIGNATURES_LEFT_OUT} }` },
  },
  {
    importPath: "./ecdsa_signature",
    importer: /[\\/]@aws-crypto[\\/]serialize[\\/]build[\\/]module[\\/]src[\\/]index\.js$/,
    replacement: { contents: `export function der2raw() { ${SIGNATURES_LEFT_OUT} } export function raw2der() { ${SIGNATURES_LEFT_OUT} }` },
  },
  // The message format's two 64-bit lengths (aws-crypto-bn.ts says why a double holds them).
  { importPath: "bn.js", importer: /[\\/]@aws-crypto[\\/]serialize[\\/]/, replacement: { file: here("./aws-crypto-bn.ts") } },
  // readable-stream 3 is a copy of Node's own stream module for browsers (38 KB); on Lambda the runtime's is used.
  // Its `pipeline` takes no callback where Node's requires one: the SDK's calls without one get one that ignores.
  {
    importPath: "readable-stream",
    importer: /[\\/](@aws-crypto[\\/](encrypt|decrypt)-node|duplexify)[\\/]/,
    replacement: {
      contents:
        'const s = require("node:stream"); module.exports = { ...s, pipeline: (...streams) => ' +
        's.pipeline(...streams, ...(typeof streams[streams.length - 1] === "function" ? [] : [() => {}])) };',
    },
  },
];

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");

const REPLACEMENT_NAMESPACE = "threadwise-replacement";

export const moduleReplacements: Plugin = {
  name: "threadwise-module-replacements",
  setup(build) {
    for (const { importPath, importer, replacement } of MODULE_REPLACEMENTS) {
      build.onResolve({ filter: new RegExp(`^${escapeRegExp(importPath)}$`) }, async (args) => {
        if (!importer.test(args.importer)) return undefined;
        if ("file" in replacement) return { path: replacement.file };
        // Resolved as if not replaced (no importer, so this plugin passes), to find its directory.
        const replaced = await build.resolve(importPath, { kind: args.kind, resolveDir: args.resolveDir });
        if (replaced.errors.length > 0) return { errors: replaced.errors };
        return { path: replaced.path, namespace: REPLACEMENT_NAMESPACE, pluginData: { contents: replacement.contents, resolveDir: dirname(replaced.path) } };
      });
    }
    build.onLoad({ filter: /.*/, namespace: REPLACEMENT_NAMESPACE }, (args) => ({
      ...(args.pluginData as { contents: string; resolveDir: string }),
      loader: "js",
    }));
  },
};
