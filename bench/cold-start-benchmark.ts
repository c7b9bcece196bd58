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
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
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

/** Fresh processes per bundle; the median is reported. */
const DEFAULT_RUNS = 7;
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
const t0 = performance.now();
const mod = await import(process.argv[2]);
const t1 = performance.now();
const result = await mod.handler(JSON.parse(process.env.BENCH_EVENT), { ...JSON.parse(process.env.BENCH_CONTEXT), getRemainingTimeInMillis: () => 60000 });
const t2 = performance.now();
process.stdout.write(JSON.stringify({ importMs: t1 - t0, invokeMs: t2 - t1, result }));
process.exit(0);
`;

interface Timing {
  importMs: number;
  invokeMs: number;
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
}

/**
 * Medians over `runs` rounds, each round one fresh process per target in turn: interleaved, so a
 * change in the machine's load during the run affects every target alike.
 */
async function measure(targets: Record<string, Target>, env: Record<string, string>, runs: number, probe: string): Promise<Record<string, Timing>> {
  const timings: Record<string, Timing[]> = Object.fromEntries(Object.keys(targets).map((name) => [name, []]));
  for (let i = 0; i < runs; i++) {
    for (const [name, { bundle, event, context }] of Object.entries(targets)) {
      timings[name].push(await probeOnce(bundle, { ...env, BENCH_EVENT: JSON.stringify(event), BENCH_CONTEXT: JSON.stringify(context) }, probe));
    }
  }
  return Object.fromEntries(
    Object.entries(timings).map(([name, ts]) => [name, { importMs: median(ts.map((t) => t.importMs)), invokeMs: median(ts.map((t) => t.invokeMs)) }]),
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
  try {
    const targets: Record<string, Target> = Object.fromEntries(
      FUNCTIONS.map((name) => [name, { bundle: bundles[name].file, event: events[name], context: lambdaContext(`bench-${name}`) }]),
    );
    targets.carelessWorker = { bundle: careless.outfile, event: events.worker, context: lambdaContext("bench-worker") };
    targets.untracedWorker = { bundle: untraced, event: events.worker, context: lambdaContext("bench-worker") };
    results = await measure(targets, env, runs, probe);
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
  const w = bundles.worker;
  const wt = results.worker;
  const report = [
    "# Cold start",
    "",
    `Generated by \`npm run bench:cold-start -- --write\` (${runs} rounds of one fresh \`node\` process per ` +
      `bundle, interleaved; medians; Node ${process.version}, ${process.arch}; NODE_OPTIONS=--enable-source-maps ` +
      `as deployed; the AWS SDK from NODE_PATH as on Lambda).`,
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
