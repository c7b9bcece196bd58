/**
 * SQL memory benchmark: how much one hostile query grows the server, through the local SQL engine
 * (`SqliteQueryEngine`: values capped by SQLITE_LIMIT_LENGTH, SQLite's heap by hard_heap_limit,
 * a worker's WebAssembly memory bounded, results capped in rows and bytes) versus the stock
 * approach: the same SQLite build in the server's own thread with SQLite's default limits,
 * reading the result as the tool does, up to 200 rows.
 *
 *   npm run bench:sql-memory
 *
 * Each measurement is a fresh `node` process. Its figure is the growth of the process's peak
 * resident set (`process.resourceUsage().maxRSS`, worker threads included) from after set-up
 * (sample database built, engine warm) to after the query. Prints a markdown table; writes nothing.
 */
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { parseCliArgs } from "../lib/local/cli-args.js";
import { DEFAULT_SQL_MAX_RESULT_BYTES, DEFAULT_SQL_MAX_ROWS } from "../lib/config/tools-config.js";
import { buildSalesDatabase, SALES_SCHEMA_DESCRIPTION } from "../lib/tools/sql/sales-dataset.js";
import { SqliteQueryEngine } from "../lib/tools/sql/sqlite-query-engine.js";
import { openDatabaseImage } from "../lib/tools/sql/sqlite-wasm.js";

const SCENARIOS = {
  "one 40 MB value": "SELECT printf('%.*c', 40000000, 'x') AS v",
  "200 rows of 900 kB": "SELECT printf('%.*c', 900000, 'x') AS v FROM order_lines",
  "sort of 3 million rows":
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 3000000) SELECT x, printf('%.100c', 'y') AS pad FROM c ORDER BY random()",
} as const;
type Scenario = keyof typeof SCENARIOS;
const APPROACHES = ["stock", "capped"] as const;
type Approach = (typeof APPROACHES)[number];

/** Long enough that the caps, not the time limit, decide. */
const TIMEOUT_MS = 120_000;
const MB = 1_000_000;

interface Measurement {
  growthBytes: number;
  ms: number;
  outcome: string;
}

const peakRss = () => process.resourceUsage().maxRSS * 1024;
const rowCount = (n: number) => `${n} row${n === 1 ? "" : "s"}`;

/** Runs one scenario in this process and prints its measurement as JSON. */
async function child(approach: Approach, scenario: Scenario): Promise<void> {
  const image = await buildSalesDatabase();
  const sql = SCENARIOS[scenario];
  let run: () => Promise<string>;
  let close: () => Promise<void>;
  if (approach === "capped") {
    const engine = new SqliteQueryEngine({ image: async () => image, schemaDescription: SALES_SCHEMA_DESCRIPTION, idleWorkers: 1 });
    await engine.query("SELECT 1", { maxRows: 1, timeoutMs: TIMEOUT_MS });
    run = async () => {
      const result = await engine.query(sql, { maxRows: DEFAULT_SQL_MAX_ROWS, maxBytes: DEFAULT_SQL_MAX_RESULT_BYTES, timeoutMs: TIMEOUT_MS });
      return `${rowCount(result.rows.length)} (truncated: ${result.truncated || "no"})`;
    };
    close = () => engine.close();
  } else {
    const db = await openDatabaseImage(image);
    run = async () => {
      const stmt = db.prepare(sql);
      const rows: unknown[] = [];
      try {
        while (rows.length < DEFAULT_SQL_MAX_ROWS && stmt.step()) rows.push(stmt.get([]));
      } finally {
        stmt.finalize();
      }
      return rowCount(rows.length);
    };
    close = async () => db.close();
  }
  const before = peakRss();
  const started = performance.now();
  const outcome = await run().catch((error: Error) => `error: ${error.message.slice(0, 60)}`);
  const measurement: Measurement = { growthBytes: peakRss() - before, ms: performance.now() - started, outcome };
  await close();
  process.stdout.write(JSON.stringify(measurement));
}

function measure(approach: Approach, scenario: Scenario): Measurement {
  const out = execFileSync(process.execPath, ["--import", "tsx", fileURLToPath(import.meta.url), "--child", approach, "--scenario", scenario], {
    encoding: "utf8",
    maxBuffer: 1 << 20,
  });
  return JSON.parse(out) as Measurement;
}

// --child and --scenario are how the benchmark runs each cell in a process of its own, not for people.
const { values } = parseCliArgs("usage: npm run bench:sql-memory", { options: { child: { type: "string" }, scenario: { type: "string" } } });
if (values.child) {
  await child(values.child as Approach, values.scenario as Scenario);
} else {
  const lines = [
    `SQL memory (\`npm run bench:sql-memory\`; one fresh process per cell; growth of peak RSS from after set-up to after the query; Node ${process.version}).`,
    "",
    "| query | stock: growth | stock: outcome | capped: growth | capped: outcome | stock ÷ capped |",
    "|---|---|---|---|---|---|",
  ];
  for (const scenario of Object.keys(SCENARIOS) as Scenario[]) {
    const [stock, capped] = APPROACHES.map((approach) => measure(approach, scenario)) as [Measurement, Measurement];
    const mb = (m: Measurement) => `${(m.growthBytes / MB).toFixed(1)} MB in ${(m.ms / 1000).toFixed(1)} s`;
    // A growth under 1 MB is below what the reading resolves: the ratio is then a lower bound.
    const ratio = `${capped.growthBytes < MB ? "≥ " : ""}${(stock.growthBytes / Math.max(capped.growthBytes, MB)).toFixed(1)}×`;
    lines.push(`| ${scenario} | ${mb(stock)} | ${stock.outcome} | ${mb(capped)} | ${capped.outcome} | ${ratio} |`);
  }
  console.log(lines.join("\n"));
}
