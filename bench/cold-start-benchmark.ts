/**
 * Cold-start benchmark: the size of each Lambda bundle and the time a fresh Node process takes
 * to import it and answer its first invocation (credentials from the secret, MongoDB connect,
 * index setup, the first query), bundled as the CDK stack bundles it versus the same code
 * bundled without care (no minification or tree-shaking-friendly resolution, every module of
 * LangChain's packages and of the installed AWS SDK clients, and a second MongoDB driver).
 *
 *   npm run bench:cold-start [-- --runs 7] [-- --write (results to bench/results)]
 *
 * Each measurement is a new `node` process (a cold container), run with the stack's
 * NODE_OPTIONS; the figures are medians. MongoDB is the embedded server, Secrets Manager and
 * SQS are the local endpoints of the handler tests: this machine, no network.
 *
 * Encryption's share: the api and worker bundles again with the AWS Encryption SDK (`@aws-crypto/*`)
 * replaced by a stub (size, import, first invocation with `CONTENT_ENCRYPTION=off`), and, in this
 * process, a new app's first turn of an existing tenant (a cold data-key cache) against its second,
 * with encryption off, local key files and KMS (the stand-in of the tests, its requests counted).
 */
import { execFileSync, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { gzipSync } from "node:zlib";
import { build } from "esbuild";
import {
  BUNDLE_FILE,
  BUNDLE_TARGET,
  bundleFunction,
  bundleOptions,
  ESM_REQUIRE_BANNER,
  MONGODB_OPTIONAL_MODULES,
  writeTokenizerData,
} from "../infra/bundling/bundling.js";
import { TOKENIZER_DATA_FILE } from "../infra/bundling/cl100k-base.js";
import { optionsUsage, parseCliArgs } from "../lib/local/cli-args.js";
import { startEmbeddedMongo } from "../lib/local/embedded-mongo.js";
import { startLocalAws } from "../test/functions/support/aws-endpoints.js";
import { startKmsKeysEndpoint } from "../test/support/kms-keys-endpoint.js";
import { apiEvent, lambdaContext, sqsEvent, sqsRecord } from "../test/functions/support/events.js";
import { signSlackRequest, TEST_SLACK_SIGNING_SECRET } from "../test/support/slack-signing.js";
import { apiPrincipal } from "../lib/auth/principal.js";
import { quantile } from "./support/statistics.js";
import { writeResults } from "./support/results.js";
import { KMS } from "@aws-sdk/client-kms";
import { MongoClient } from "mongodb";
import { z } from "zod";
import { createApp, type App } from "../lib/app.js";
import { loadConfig } from "../lib/config/config.js";
import { type ContentKeyDocument, KmsTenantKeys } from "../lib/crypto/kms-tenant-keys.js";
import { LocalTenantKeys } from "../lib/crypto/local-tenant-keys.js";
import { CONTENT_KEYS_COLLECTION } from "../lib/crypto/tenant-keys.js";
import type { ToolDefinition } from "../lib/tools/tool.js";

/** Fresh processes per bundle; the median is reported. */
const DEFAULT_RUNS = 7;
/** Rounds of the data-key measurement (in this process, about a second each), at least. */
const MIN_DATA_KEY_ROUNDS = 9;
/** The targets for the worker: the issue's 1.5 MB of code, plus X-Ray tracing (the "tracer left out" row measures its cost). */
const TARGET_WORKER_BYTES = 1.65 * 1024 * 1024;
const TARGET_IMPORT_MS = 200;
const FUNCTIONS = ["api", "worker", "slack", "teams"] as const;
type FunctionName = (typeof FUNCTIONS)[number];

const root = fileURLToPath(new URL("..", import.meta.url));
const require = createRequire(import.meta.url);

/** Every subpath a package exports for `import`, as import specifiers. */
function exportedSpecifiers(pkg: string): string[] {
  const manifest = JSON.parse(readFileSync(require.resolve(`${pkg}/package.json`), "utf8")) as { exports?: Record<string, unknown> };
  return Object.keys(manifest.exports ?? { ".": {} })
    .filter((key) => key.startsWith(".") && !key.includes("*") && !key.endsWith(".json") && key !== "./package.json")
    .map((key) => (key === "." ? pkg : `${pkg}/${key.slice(2)}`));
}

/** Specifiers that bundle on their own (some subpaths need optional peers that are not installed). */
async function bundleable(specifiers: string[], dir: string): Promise<string[]> {
  const ok = await Promise.all(
    specifiers.map(async (specifier) => {
      try {
        await build({
          stdin: { contents: `import * as m from ${JSON.stringify(specifier)}; console.log(m);`, resolveDir: root },
          bundle: true,
          platform: "node",
          format: "esm",
          write: false,
          external: [...MONGODB_OPTIONAL_MODULES],
          logLevel: "silent",
          outdir: dir,
        });
        return true;
      } catch {
        return false;
      }
    }),
  );
  return specifiers.filter((_, i) => ok[i]);
}

/**
 * The worker as it would ship without care: CommonJS builds preferred, no minification, no
 * tree shaking, every module of LangChain's packages and of the AWS SDK clients pulled in by
 * namespace imports, and the mongodb 5 driver beside mongodb 6.
 */
async function carelessWorker(dir: string): Promise<{ outfile: string; modules: number }> {
  const langchain = ["@langchain/core", "@langchain/langgraph", "@langchain/langgraph-checkpoint", "@langchain/langgraph-checkpoint-mongodb", "@langchain/aws"];
  const sdk = readdirNames(join(root, "node_modules/@aws-sdk"))
    .filter((n) => n.startsWith("client-"))
    .map((n) => `@aws-sdk/${n}`);
  const specifiers = await bundleable([...langchain.flatMap(exportedSpecifiers), ...sdk, "mongodb-v5"], dir);
  const entry = join(dir, "careless-worker.mjs");
  writeFileSync(
    entry,
    [
      `export { handler } from ${JSON.stringify(join(root, "functions/worker.ts"))};`,
      ...specifiers.map((s, i) => `import * as m${i} from ${JSON.stringify(s)};`),
      `export const everything = [${specifiers.map((_, i) => `m${i}`).join(", ")}];`,
    ].join("\n"),
  );
  const outfile = join(dir, "careless", "worker", "index.mjs");
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    target: BUNDLE_TARGET,
    mainFields: ["main"],
    treeShaking: false,
    banner: { js: ESM_REQUIRE_BANNER },
    // Only what is not installed stays out (mongodb 5 needs `socks`, which is).
    external: MONGODB_OPTIONAL_MODULES.filter((name) => !resolvable(name)),
    nodePaths: [join(root, "node_modules")],
    logLevel: "error",
  });
  return { outfile, modules: specifiers.length };
}

/** The tracer's surface the functions use, doing nothing: what the worker costs without X-Ray. */
const TRACER_STUB = `
export class Tracer {
  getRootXrayTraceId() { return undefined; }
  getSegment() { return undefined; }
  isTraceSampled() { return false; }
  isTracingEnabled() { return false; }
  captureAWSv3Client(client) { return client; }
  putAnnotation() {}
}
export const captureLambdaHandler = () => ({ before: () => undefined });
`;

/**
 * The AWS Encryption SDK's surface `lib/crypto` uses, doing nothing: what a bundle costs without
 * content encryption. Such a bundle runs with `CONTENT_ENCRYPTION=off` only.
 */
const ENCRYPTION_SDK_STUB = `
const leftOut = () => { throw new Error("the AWS Encryption SDK is left out of this bundle"); };
export const AlgorithmSuiteIdentifier = {};
export const CommitmentPolicy = {};
export const RawAesWrappingSuiteIdentifier = {};
export class NodeCachingMaterialsManager { constructor() { leftOut(); } }
export class MultiKeyringNode { constructor() { leftOut(); } }
export class KmsKeyringNode { constructor() { leftOut(); } }
export class RawAesKeyringNode { constructor() { leftOut(); } }
export const getLocalCryptographicMaterialsCache = () => ({});
export const buildEncrypt = () => ({ encrypt: leftOut });
export const buildDecrypt = () => ({ decrypt: leftOut });
export class NodeAlgorithmSuite { constructor() { leftOut(); } }
export const deserializeFactory = () => ({ deserializeMessageHeader: leftOut });
`;

/** A function bundled as the stack bundles it, but with every `@aws-crypto/*` package replaced by a stub. */
async function withoutEncryptionSdk(name: FunctionName, dir: string): Promise<string> {
  const stub = join(dir, "encryption-sdk-stub.mjs");
  writeFileSync(stub, ENCRYPTION_SDK_STUB);
  const outfile = join(dir, "unencrypted", name, BUNDLE_FILE);
  const options = bundleOptions(join(root, `functions/${name}.ts`), outfile);
  await build({
    ...options,
    plugins: [{ name: "encryption-sdk-stub", setup: (b) => b.onResolve({ filter: /^@aws-crypto\// }, () => ({ path: stub })) }, ...(options.plugins ?? [])],
  });
  await writeTokenizerData(dirname(outfile));
  return outfile;
}

/** The worker bundled as the stack bundles it, but with Powertools Tracer (and so the X-Ray SDK) replaced by a stub. */
async function workerWithoutTracer(dir: string): Promise<string> {
  const stub = join(dir, "tracer-stub.mjs");
  writeFileSync(stub, TRACER_STUB);
  const outfile = join(dir, "untraced", "worker", BUNDLE_FILE);
  const options = bundleOptions(join(root, "functions/worker.ts"), outfile);
  await build({
    ...options,
    plugins: [
      { name: "tracer-stub", setup: (b) => b.onResolve({ filter: /^@aws-lambda-powertools\/tracer(\/middleware)?$/ }, () => ({ path: stub })) },
      ...(options.plugins ?? []),
    ],
  });
  await writeTokenizerData(dirname(outfile));
  return outfile;
}

function resolvable(name: string): boolean {
  try {
    require.resolve(name);
    return true;
  } catch {
    return false;
  }
}

function readdirNames(dir: string): string[] {
  return execFileSync("ls", [dir], { encoding: "utf8" }).split("\n").filter(Boolean);
}

/** Runs in each fresh process: import the bundle, invoke the handler once, report both times. */
const PROBE = `
const cpuMs = () => { const { user, system } = process.cpuUsage(); return (user + system) / 1000; };
const t0 = performance.now();
const c0 = cpuMs();
const mod = await import(process.argv[2]);
const t1 = performance.now();
const c1 = cpuMs();
const result = await mod.handler(JSON.parse(process.env.BENCH_EVENT), { ...JSON.parse(process.env.BENCH_CONTEXT), getRemainingTimeInMillis: () => 60000 });
const t2 = performance.now();
const c2 = cpuMs();
process.stdout.write(JSON.stringify({ importMs: t1 - t0, invokeMs: t2 - t1, importCpuMs: c1 - c0, invokeCpuMs: c2 - c1, result }));
process.exit(0);
`;

interface Timing {
  importMs: number;
  invokeMs: number;
  /** This process's CPU time over the same spans: what other processes on a shared machine do not inflate. */
  importCpuMs: number;
  invokeCpuMs: number;
}

const median = (xs: number[]) => quantile(xs, 0.5);

/** One fresh process: spawned asynchronously, because the local AWS endpoints answer from this process's event loop. */
function probeOnce(bundle: string, env: Record<string, string>, probe: string): Promise<Timing> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [probe, pathToFileURL(bundle).href], { env: { ...process.env, ...env } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), 120_000);
    child.on("close", (code) => {
      clearTimeout(timer);
      if (code !== 0) return reject(new Error(`probe failed for ${bundle} (exit ${code}): ${stderr.slice(-1500)}`));
      resolve(JSON.parse(stdout.slice(stdout.lastIndexOf('{"importMs"'))) as Timing);
    });
  });
}

interface Target {
  bundle: string;
  event: unknown;
  context: unknown;
  /** Variables of this target only, over the shared ones. */
  env?: Record<string, string>;
}

/**
 * Medians over `runs` rounds, each round one fresh process per target in turn: interleaved, so a
 * change in the machine's load during the run affects every target alike.
 */
async function measure(targets: Record<string, Target>, env: Record<string, string>, runs: number, probe: string): Promise<Record<string, Timing>> {
  const timings: Record<string, Timing[]> = Object.fromEntries(Object.keys(targets).map((name) => [name, []]));
  for (let i = 0; i < runs; i++) {
    for (const [name, { bundle, event, context, env: own }] of Object.entries(targets)) {
      timings[name].push(await probeOnce(bundle, { ...env, ...own, BENCH_EVENT: JSON.stringify(event), BENCH_CONTEXT: JSON.stringify(context) }, probe));
    }
  }
  return Object.fromEntries(
    Object.entries(timings).map(([name, ts]) => [
      name,
      {
        importMs: median(ts.map((t) => t.importMs)),
        invokeMs: median(ts.map((t) => t.invokeMs)),
        importCpuMs: median(ts.map((t) => t.importCpuMs)),
        invokeCpuMs: median(ts.map((t) => t.invokeCpuMs)),
      },
    ]),
  );
}

/** Runs in each fresh process: import the bundled token counter, then time its first count (the encoder is built then). */
const TOKENIZER_PROBE = `
const { countTextTokens } = await import(process.argv[2]);
const t0 = performance.now();
countTextTokens("How many tokens is this?");
const t1 = performance.now();
countTextTokens("And this, once the encoder exists?");
const t2 = performance.now();
process.stdout.write(JSON.stringify({ firstMs: t1 - t0, secondMs: t2 - t1 }));
`;

/** The first token count in fresh processes (median ms): how long it blocks the event loop. */
async function measureFirstCount(dir: string, runs: number): Promise<{ firstMs: number; secondMs: number }> {
  const outdir = join(dir, "tokenizer");
  await bundleFunction(join(root, "lib/model-view/token-counter.ts"), outdir);
  const probe = join(dir, "tokenizer-probe.mjs");
  writeFileSync(probe, TOKENIZER_PROBE);
  const samples = Array.from(
    { length: runs },
    () =>
      JSON.parse(execFileSync(process.execPath, [probe, pathToFileURL(join(outdir, BUNDLE_FILE)).href], { encoding: "utf8" })) as {
        firstMs: number;
        secondMs: number;
      },
  );
  return { firstMs: median(samples.map((s) => s.firstMs)), secondMs: median(samples.map((s) => s.secondMs)) };
}

interface TurnCost {
  ms: number;
  cpuMs: number;
  kmsCalls: number;
  /** Time the turn waited on KMS (the client's requests, summed). */
  kmsMs: number;
}
/** Per setting, the medians of the cold turn and the warm one, and of each round's difference (the two turns ran back to back). */
type DataKeyInit = Record<"off" | "local" | "kms", { cold: TurnCost; warm: TurnCost; extraMs: number; extraCpuMs: number }>;

const dataKeyTool: ToolDefinition = {
  name: "look_up",
  description: "Reads a report.",
  schema: z.object({ key: z.string() }),
  sideEffects: false,
  // Long enough to be offloaded to `artifacts`.
  run: async ({ key }: { key: string }) => `report on ${key}:\n${Array.from({ length: 400 }, (_, i) => `${i},north,product-${i % 37},${i * 13}`).join("\n")}`,
};

/**
 * A container's first turn with a cold data-key cache against its next one, in this process (the
 * offline model, the embedded server): for each setting and round, a conversation of an existing
 * tenant is written by a long-lived app, then a new app (new caches: the state of a new container,
 * its modules already loaded) runs two turns of it. Encryption's part of the first turn is what the
 * cold turn adds over the warm one, against the same with encryption off; KMS is the stand-in of
 * the tests, whose requests are counted (each is a network round trip in AWS, not measured here).
 */
async function measureDataKeyInit(mongoUri: string, rounds: number): Promise<DataKeyInit> {
  const kms = await startKmsKeysEndpoint();
  const kmsClient = new KMS({ endpoint: kms.url, region: "us-east-1", credentials: { accessKeyId: "AKIDBENCH", secretAccessKey: "bench" } });
  let kmsMs = 0;
  kmsClient.middlewareStack.add(
    (next) => async (args) => {
      const started = performance.now();
      try {
        return await next(args);
      } finally {
        kmsMs += performance.now() - started;
      }
    },
    { step: "initialize", name: "benchKmsTime" },
  );
  const client = new MongoClient(mongoUri);
  await client.connect();
  const keysDir = mkdtempSync(join(tmpdir(), "threadwise-cold-start-keys-"));
  const settings = ["off", "local", "kms"] as const;
  const config = (setting: (typeof settings)[number]) => loadConfig({ MONGODB_URI: mongoUri, MONGODB_DB: `cold_start_data_keys_${setting}` });
  const keysOf = (setting: (typeof settings)[number]) =>
    setting === "off"
      ? undefined
      : setting === "local"
        ? new LocalTenantKeys(keysDir)
        : new KmsTenantKeys(kmsClient, client.db(config(setting).dbName).collection<ContentKeyDocument>(CONTENT_KEYS_COLLECTION));
  const appOf = (setting: (typeof settings)[number], setup: "create" | "ensure") => {
    const contentKeys = keysOf(setting);
    return createApp(config(setting), { mongoClient: client, tools: [dataKeyTool], setup, ...(contentKeys && { contentKeys }) });
  };
  const samples = Object.fromEntries(settings.map((s) => [s, { cold: [] as TurnCost[], warm: [] as TurnCost[] }])) as Record<
    (typeof settings)[number],
    { cold: TurnCost[]; warm: TurnCost[] }
  >;
  const writers = Object.fromEntries(await Promise.all(settings.map(async (s) => [s, await appOf(s, "create")] as const))) as Record<
    (typeof settings)[number],
    App
  >;
  const turn = async (app: App, conversationId: string, caller: { principal: ReturnType<typeof apiPrincipal>; roles: string[] }, content: string) => {
    const cpu = process.cpuUsage();
    const calls = kms.calls.length;
    const waited = kmsMs;
    const started = performance.now();
    await app.runner.run({ conversationId, caller, content, turnId: randomUUID() });
    const used = process.cpuUsage(cpu);
    return { ms: performance.now() - started, cpuMs: (used.user + used.system) / 1000, kmsCalls: kms.calls.length - calls, kmsMs: kmsMs - waited };
  };
  try {
    // One more round than reported: the first warms this process's code for every setting alike.
    for (let round = 0; round <= rounds; round++) {
      for (const setting of round % 2 === 0 ? settings : [...settings].reverse()) {
        const caller = { principal: apiPrincipal("bench", `tenant-${round}`), roles: [] as string[] };
        const { _id } = await writers[setting].database.conversations.create(caller.principal);
        await turn(writers[setting], _id, caller, 'look_up {"key": "north"}');
        await turn(writers[setting], _id, caller, "how did the quarter go?");
        const fresh = await appOf(setting, "ensure");
        const cold = await turn(fresh, _id, caller, 'look_up {"key": "south"}');
        const warm = await turn(fresh, _id, caller, 'look_up {"key": "east"}');
        await fresh.close();
        if (round === 0) continue;
        samples[setting].cold.push(cold);
        samples[setting].warm.push(warm);
      }
    }
  } finally {
    for (const app of Object.values(writers)) await app.close();
    await client.close();
    await kms.close();
  }
  const medianOf = (costs: TurnCost[]): TurnCost => ({
    ms: median(costs.map((c) => c.ms)),
    cpuMs: median(costs.map((c) => c.cpuMs)),
    kmsCalls: median(costs.map((c) => c.kmsCalls)),
    kmsMs: median(costs.map((c) => c.kmsMs)),
  });
  const extra = (s: (typeof settings)[number], pick: (c: TurnCost) => number) => median(samples[s].cold.map((c, i) => pick(c) - pick(samples[s].warm[i])));
  return Object.fromEntries(
    settings.map((s) => [
      s,
      { cold: medianOf(samples[s].cold), warm: medianOf(samples[s].warm), extraMs: extra(s, (c) => c.ms), extraCpuMs: extra(s, (c) => c.cpuMs) },
    ]),
  ) as DataKeyInit;
}

function dataKeyReport(init: DataKeyInit, rounds: number): string[] {
  const name = { off: "off (`CONTENT_ENCRYPTION=off`)", local: "local key files (`CONTENT_KEYS=local`)", kms: "KMS (`CONTENT_KEYS=kms`, the stand-in)" };
  const share = (s: "local" | "kms", pick: "extraMs" | "extraCpuMs") => (init[s][pick] - init.off[pick]).toFixed(0);
  return [
    `Data keys: a new app's first turn of an existing tenant's conversation (cold data-key cache) against its second (warm), ` +
      `back to back, in this process (offline model, embedded server; medians of ${rounds} rounds, a tool output offloaded in both turns):`,
    "",
    "| encryption | first turn | second turn | first less second | CPU, first / second | CPU, first less second | " +
      "KMS requests, first / second | waiting on KMS, first turn |",
    "|---|---:|---:|---:|---:|---:|---:|---:|",
    ...(["off", "local", "kms"] as const).map(
      (s) =>
        `| ${name[s]} | ${init[s].cold.ms.toFixed(0)} ms | ${init[s].warm.ms.toFixed(0)} ms | ${init[s].extraMs.toFixed(0)} ms | ` +
        `${init[s].cold.cpuMs.toFixed(0)} / ${init[s].warm.cpuMs.toFixed(0)} ms | ${init[s].extraCpuMs.toFixed(0)} ms | ` +
        `${s === "kms" ? `${init[s].cold.kmsCalls} / ${init[s].warm.kmsCalls} | ${init[s].cold.kmsMs.toFixed(0)} ms` : " | "} |`,
    ),
    "",
    `Encryption's part of a cold container's first turn (its first less its second, less the same with encryption off; ` +
      `differences of a few tens of ms are within this shared machine's noise): local ${share("local", "extraMs")} ms (CPU ` +
      `${share("local", "extraCpuMs")} ms), KMS ${share("kms", "extraMs")} ms (CPU ${share("kms", "extraCpuMs")} ms), of which ` +
      `${init.kms.cold.kmsMs.toFixed(0)} ms waiting on its ${init.kms.cold.kmsCalls} KMS requests to the local stand-in (the tenant's data keys, ` +
      `one per collection written and read); in AWS each is a round trip to KMS. The turns after make none until ` +
      `\`CONTENT_DATA_KEY_MAX_AGE_SECONDS\` (\`test/crypto/field-cipher.data-keys.test.ts\`).`,
  ];
}

async function main(): Promise<void> {
  const options = { runs: { type: "string" }, write: { type: "boolean", default: false } } as const;
  const { values } = parseCliArgs(optionsUsage("bench:cold-start", options), { options });
  const runs = Number(values.runs ?? DEFAULT_RUNS);
  const dir = mkdtempSync(join(tmpdir(), "threadwise-cold-start-"));
  const probe = join(dir, "probe.mjs");
  writeFileSync(probe, PROBE);

  const bundles = {} as Record<FunctionName, { file: string; bytes: number; gzipBytes: number; dataBytes: number }>;
  for (const name of FUNCTIONS) {
    const file = join(dir, "careful", name, BUNDLE_FILE);
    await bundleFunction(join(root, `functions/${name}.ts`), dirname(file));
    const code = readFileSync(file);
    bundles[name] = { file, bytes: code.length, gzipBytes: gzipSync(code).length, dataBytes: statSync(join(dirname(file), TOKENIZER_DATA_FILE)).size };
  }
  const careless = await carelessWorker(dir);
  const carelessCode = readFileSync(careless.outfile);
  const untraced = await workerWithoutTracer(dir);
  const untracedBytes = statSync(untraced).size;
  const unencrypted = {} as Record<"api" | "worker", { file: string; bytes: number; gzipBytes: number }>;
  for (const name of ["api", "worker"] as const) {
    const file = await withoutEncryptionSdk(name, dir);
    const code = readFileSync(file);
    unencrypted[name] = { file, bytes: code.length, gzipBytes: gzipSync(code).length };
  }

  const mongo = await startEmbeddedMongo();
  const aws = await startLocalAws();
  aws.setCredentials({
    mongodbUri: mongo.uri,
    slackSigningSecret: TEST_SLACK_SIGNING_SECRET,
    slackBotToken: "xoxb-bench",
    teamsAppId: "00000000-0000-0000-0000-000000000001",
    teamsAppPassword: "bench",
  });
  // Contents sealed as the stack deploys them (CONTENT_KEYS=kms), tenants' keys made in the KMS stand-in.
  const kms = await startKmsKeysEndpoint();
  const env = {
    ...aws.environment,
    CONTENT_KEYS: "kms",
    AWS_ENDPOINT_URL_KMS: kms.url,
    MONGODB_DB: "cold_start_bench",
    MODEL_PROVIDER: "bedrock",
    POWERTOOLS_SERVICE_NAME: "threadwise-bench",
    POWERTOOLS_METRICS_NAMESPACE: "Threadwise",
    POWERTOOLS_LOG_LEVEL: "SILENT",
    NODE_OPTIONS: "--enable-source-maps",
    // Where the bundles find the AWS SDK, as on Lambda, whose runtime puts its SDK on NODE_PATH.
    NODE_PATH: join(root, "node_modules"),
    // As in a Lambda container with active tracing, so the tracer patches and records (segments go to an unbound UDP port).
    AWS_LAMBDA_FUNCTION_NAME: "bench",
    _X_AMZN_TRACE_ID: "Root=1-67a0b1c2-0123456789abcdef01234567;Parent=0123456789abcdef;Sampled=1",
    AWS_XRAY_CONTEXT_MISSING: "IGNORE_ERROR",
    // The tool engines of a deployment (clients made at start, no calls), not the sample ones.
    SQL_ENGINE: "athena",
    ATHENA_WORKGROUP: "bench",
    ATHENA_DATABASE: "sales",
    ATHENA_OUTPUT_LOCATION: "s3://threadwise-bench/athena/",
    DOCUMENTS_ENGINE: "bedrock-kb",
    BEDROCK_KB_ID: "BENCHKB001",
  };
  const workerJob = {
    channel: "api",
    conversationKey: "00000000-0000-4000-8000-000000000000",
    caller: { principal: apiPrincipal("bench"), roles: [] },
    owner: { principal: apiPrincipal("bench"), roles: [] },
    readScope: "user::bench",
    content: "hello",
    dedupeId: "00000000-0000-4000-8000-000000000001",
    receivedAt: new Date().toISOString(),
  };
  const slackBody = JSON.stringify({ token: "x", challenge: "bench", type: "url_verification" });
  const events: Record<FunctionName, unknown> = {
    api: apiEvent({ method: "GET", path: "/healthz", routeKey: "GET /healthz" }),
    // A turn for a conversation that does not exist: connect, set up, look it up, give up.
    worker: sqsEvent(
      sqsRecord({ messageId: "m1", queueUrl: aws.queueUrl, body: JSON.stringify(workerJob), groupId: "g", deduplicationId: "d", sequenceNumber: "1" }),
    ),
    slack: apiEvent({ method: "POST", path: "/slack/events", routeKey: "POST /slack/events", body: slackBody, headers: signSlackRequest(slackBody) }),
    teams: apiEvent({ method: "POST", path: "/teams/messages", routeKey: "POST /teams/messages", body: { type: "message" } }),
  };

  const rows: string[] = [];
  let results: Record<string, Timing>;
  let dataKeys: DataKeyInit;
  /** The machine's 1-minute load average before and after the fresh processes: on a shared machine, wall times depend on it. */
  const loads: number[] = [];
  try {
    const targets: Record<string, Target> = Object.fromEntries(
      FUNCTIONS.map((name) => [name, { bundle: bundles[name].file, event: events[name], context: lambdaContext(`bench-${name}`) }]),
    );
    targets.carelessWorker = { bundle: careless.outfile, event: events.worker, context: lambdaContext("bench-worker") };
    targets.untracedWorker = { bundle: untraced, event: events.worker, context: lambdaContext("bench-worker") };
    for (const name of ["api", "worker"] as const) {
      targets[`${name}WithoutEncryption`] = {
        bundle: unencrypted[name].file,
        event: events[name],
        context: lambdaContext(`bench-${name}`),
        env: { CONTENT_ENCRYPTION: "off" },
      };
    }
    loads.push(loadavg()[0]);
    results = await measure(targets, env, runs, probe);
    loads.push(loadavg()[0]);
    dataKeys = await measureDataKeyInit(mongo.uri, Math.max(runs, MIN_DATA_KEY_ROUNDS));
  } finally {
    await aws.close();
    await kms.close();
    await mongo.stop();
  }
  const tokenizer = await measureFirstCount(dir, runs);

  const mb = (b: number) => `${(b / 1024 / 1024).toFixed(2)} MB`;
  const ms = (t: number) => `${t.toFixed(0)} ms`;
  for (const name of FUNCTIONS) {
    const b = bundles[name];
    const t = results[name];
    rows.push(
      `| ${name} | ${mb(b.bytes)} | ${mb(b.gzipBytes)} | ${mb(b.dataBytes)} | ${ms(t.importMs)} | ${ms(t.invokeMs)} | ${ms(t.importMs + t.invokeMs)} |`,
    );
  }
  const cw = results.carelessWorker;
  rows.push(
    `| worker, without care | ${mb(carelessCode.length)} | ${mb(gzipSync(carelessCode).length)} | (inline) | ` +
      `${ms(cw.importMs)} | ${ms(cw.invokeMs)} | ${ms(cw.importMs + cw.invokeMs)} |`,
  );
  const ut = results.untracedWorker;
  rows.push(`| worker, tracer left out | ${mb(untracedBytes)} | | | ${ms(ut.importMs)} | ${ms(ut.invokeMs)} | ${ms(ut.importMs + ut.invokeMs)} |`);
  for (const name of ["api", "worker"] as const) {
    const u = unencrypted[name];
    const t = results[`${name}WithoutEncryption`];
    rows.push(
      `| ${name}, Encryption SDK left out | ${mb(u.bytes)} | ${mb(u.gzipBytes)} | | ${ms(t.importMs)} | ${ms(t.invokeMs)} | ${ms(t.importMs + t.invokeMs)} |`,
    );
  }
  const encryptionShare = (["api", "worker"] as const).map((name) => {
    const [b, u, t, v] = [bundles[name], unencrypted[name], results[name], results[`${name}WithoutEncryption`]];
    return (
      `${name} size +${((b.bytes - u.bytes) / 1024).toFixed(0)} KB (${(((b.bytes - u.bytes) / b.bytes) * 100).toFixed(1)} % of its code; ` +
      `+${((b.gzipBytes - u.gzipBytes) / 1024).toFixed(0)} KB gzip), import ${(t.importMs / v.importMs).toFixed(2)}× ` +
      `(CPU ${t.importCpuMs.toFixed(0)} against ${v.importCpuMs.toFixed(0)} ms, ${(t.importCpuMs / v.importCpuMs).toFixed(2)}×), ` +
      `import + first invocation ${((t.importMs + t.invokeMs) / (v.importMs + v.invokeMs)).toFixed(2)}× ` +
      `(CPU ${((t.importCpuMs + t.invokeCpuMs) / (v.importCpuMs + v.invokeCpuMs)).toFixed(2)}×)`
    );
  });
  const w = bundles.worker;
  const wt = results.worker;
  const report = [
    "# Cold start",
    "",
    `Generated by \`npm run bench:cold-start -- --write\` (${runs} rounds of one fresh \`node\` process per ` +
      `bundle, interleaved; medians; Node ${process.version}, ${process.arch}; NODE_OPTIONS=--enable-source-maps ` +
      `as deployed; the AWS SDK from NODE_PATH as on Lambda; load average ${loads.map((l) => l.toFixed(1)).join(" then ")}).`,
    "First invocation = credentials from Secrets Manager (local endpoint), MongoDB connect and index setup " +
      "(embedded server), then the handler's first queries.",
    "",
    "| bundle | code (minified) | code (gzip) | tokenizer data file | import | first invocation | total |",
    "|---|---|---|---|---|---|---|",
    ...rows,
    "",
    `Careless worker: ${careless.modules} extra entry modules (every export of LangChain's packages, every ` +
      `installed AWS SDK client, mongodb 5 beside mongodb 6), CommonJS builds preferred, no minification, no tree ` +
      `shaking.`,
    "",
    `Ratios, careless ÷ careful worker: size ${(carelessCode.length / w.bytes).toFixed(1)}×, import ` +
      `${(cw.importMs / wt.importMs).toFixed(1)}×, import + first invocation ` +
      `${((cw.importMs + cw.invokeMs) / (wt.importMs + wt.invokeMs)).toFixed(1)}×.`,
    "",
    `Tracing (Powertools Tracer with the X-Ray SDK, active as in Lambda), worker ÷ worker with the tracer left ` +
      `out: size +${((w.bytes - untracedBytes) / 1024).toFixed(0)} KB (${(w.bytes / untracedBytes).toFixed(2)}×), ` +
      `import ${(wt.importMs / ut.importMs).toFixed(2)}×, import + first invocation ` +
      `${((wt.importMs + wt.invokeMs) / (ut.importMs + ut.invokeMs)).toFixed(2)}×.`,
    "",
    `Encryption (the AWS Encryption SDK's \`@aws-crypto/*\` packages, as deployed ÷ replaced by a stub of the names \`lib/crypto\` ` +
      `imports, run with \`CONTENT_ENCRYPTION=off\`): ${encryptionShare.join("; ")}.`,
    "",
    ...dataKeyReport(dataKeys, Math.max(runs, MIN_DATA_KEY_ROUNDS)),
    "",
    `Tokenizer (the bundled token counter, fresh processes): first count ${tokenizer.firstMs.toFixed(0)} ms ` +
      `(builds the encoder from the ranks file; blocks the event loop), next count ` +
      `${tokenizer.secondMs.toFixed(2)} ms.`,
    "",
    `Targets: worker code ≤ ${mb(TARGET_WORKER_BYTES)}: ` +
      `${w.bytes <= TARGET_WORKER_BYTES ? "met" : `not met (${mb(w.bytes)})`}; import < ${TARGET_IMPORT_MS} ms: ` +
      `${wt.importMs < TARGET_IMPORT_MS ? "met" : `not met (${ms(wt.importMs)})`}.`,
    "",
  ].join("\n");
  process.stdout.write(report);
  // Tracked results change only when asked: `npm run bench:cold-start -- --write`.
  if (values.write) await writeResults({ "cold-start.md": report });
}

await main();
