/**
 * Long-conversation benchmark (issue 28): one conversation driven through the HTTP API of the local
 * server, as users drive it, the model being the real `ChatBedrockConverse` against the local
 * Converse endpoint, a tool call in most turns with outputs of 1–20 KB (those over the view's
 * 2,000-token threshold offloaded to `artifacts`). Per bucket of 100 turns: bytes stored per turn
 * (every document's BSON bytes, `BSON.calculateObjectSize`, read at the end of each bucket: the
 * embedded server has no collStats), the largest document, server time per turn (the HTTP request,
 * p50 and p95; the scripted model answers in about a millisecond) and the process's RSS.
 *
 * In the same run, stock LangGraph (`createReactAgent` + `MongoDBSaver`, the same model, endpoint
 * and tool) for `--stock-turns` turns. A second part runs `--big-turns` real turns (no HTTP, the
 * offline model, a tool call in one turn of five) into another conversation, exactly as turns
 * leave it (saver, archive, record, recall index), then times its next turn through the HTTP API.
 *
 *   npm run bench:long [-- --turns 2000] [-- --stock-turns 200] [-- --big-turns 10000] [-- --write (results to bench/results)]
 *
 * Everything runs in this process (server, endpoint, driver) but the embedded MongoDB-compatible server.
 */
import { randomUUID } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { ChatBedrockConverse } from "@langchain/aws";
import { BedrockRuntimeClient } from "@aws-sdk/client-bedrock-runtime";
import { HumanMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { MongoDBSaver } from "@langchain/langgraph-checkpoint-mongodb";
import { createReactAgent } from "@langchain/langgraph/prebuilt";
import { BSON, MongoClient, type Db } from "mongodb";
import { z } from "zod";
import { createApp } from "../lib/app.js";
import { apiPrincipal } from "../lib/auth/index.js";
import { loadConfig } from "../lib/config/config.js";
import { optionsUsage, parseCliArgs } from "../lib/local/cli-args.js";
import { startEmbeddedMongo } from "../lib/local/embedded-mongo.js";
import { loadOrCreateLocalKeys, mintLocalToken } from "../lib/local/local-keys.js";
import { startLocalServer } from "../lib/local/local-server.js";
import { silentLogger } from "../lib/logger.js";
import { COLLECTIONS } from "../lib/store/collections.js";
import type { ToolDefinition } from "../lib/tools/tool.js";
import { lastUserText, startConverseEndpoint, type ConverseRequest, type ScriptedReply } from "../test/support/converse-endpoint.js";
import { type Axis, lineChart, type Panel, panelInRow } from "./support/line-chart.js";
import { formatCount, markdownTable } from "./support/markdown.js";
import { writeResults } from "./support/results.js";

const BUCKET = 100;
/** Rows of the report per turn, cycled (about 32 bytes a row: 1 KB to 20 KB); 0: no tool call. */
const REPORT_ROWS = [40, 120, 0, 250, 620, 60, 180, 0, 400, 90];

const options = {
  turns: { type: "string", default: "2000" },
  "stock-turns": { type: "string", default: "200" },
  "big-turns": { type: "string", default: "10000" },
  write: { type: "boolean", default: false },
} as const;
const { values } = parseCliArgs(optionsUsage("bench:long", options), { options });
const turns = Number(values.turns);
const stockTurns = Number(values["stock-turns"]);
const bigTurns = Number(values["big-turns"]);
if (![turns, stockTurns].every((n) => Number.isInteger(n) && n >= 2 * BUCKET) || !Number.isInteger(bigTurns) || bigTurns < 0) {
  throw new Error(`--turns and --stock-turns must be integers of at least ${2 * BUCKET}, --big-turns an integer`);
}

function report(rows: number): string {
  return [
    "| row | customer | region | revenue | day |",
    ...Array.from({ length: rows }, (_, i) => `| ${i + 1} | customer-${i % 97} | region-${i % 7} | ${(i * 37) % 1000}.50 | 2026-11-30 |`),
  ].join("\n");
}
const reportTool: ToolDefinition = {
  name: "sales_report",
  description: "Returns a sales report with the given number of rows.",
  schema: z.object({ rows: z.number().int().min(1).max(100_000) }),
  sideEffects: false,
  run: async ({ rows }: { rows: number }) => report(rows),
};
const question = (turn: number) => {
  const rows = REPORT_ROWS[turn % REPORT_ROWS.length];
  return rows === 0 ? `Turn ${turn}: anything new today?` : `Turn ${turn}: show me the sales report with ${rows} rows.`;
};

let toolUses = 0;
/** The scripted model: the report when the question asks for one and no result came yet, else a short answer. */
function respond(request: ConverseRequest): ScriptedReply {
  const last = request.messages[request.messages.length - 1];
  const hasResult = last.content.some((block) => "toolResult" in block);
  const rows = Number(/with (\d+) rows/.exec(lastUserText(request))?.[1] ?? 0);
  // Ids unique across the conversation: stock sends every earlier tool use again, and Converse rejects a repeated id.
  if (!hasResult && rows > 0) return { toolUses: [{ name: "sales_report", input: { rows }, toolUseId: `tooluse_${++toolUses}` }] };
  return { text: hasResult ? "Here is the summary: revenue is steady across the regions." : "Nothing new; all quiet today." };
}

async function storage(db: Db, collections: readonly string[]): Promise<{ bytes: number; largest: number; largestIn: string }> {
  let bytes = 0;
  let largest = 0;
  let largestIn = "";
  for (const name of collections) {
    for await (const doc of db.collection(name).find({})) {
      const size = BSON.calculateObjectSize(doc);
      bytes += size;
      if (size > largest) [largest, largestIn] = [size, name];
    }
  }
  return { bytes, largest, largestIn };
}

const quantile = (xs: readonly number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))];
const _mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;
const mb = (bytes: number) => `${(bytes / 1024 ** 2).toFixed(2)} MB`;

interface Bucket {
  lastTurn: number;
  /** Growth of every document's BSON bytes over the bucket, per turn. */
  storedPerTurn: number;
  p50: number;
  p95: number;
  /** Median CPU time of this process per turn (server, endpoint, client). */
  cpuP50: number;
  rssMb: number;
  largest: number;
}
interface Snapshot {
  turn: number;
  bytes: number;
  largest: number;
  largestIn: string;
}

const PRODUCT_COLLECTIONS = Object.values(COLLECTIONS);
const STOCK_COLLECTIONS = ["checkpoints", "checkpoint_writes"];

const mongo = await startEmbeddedMongo();
const run = randomUUID().slice(0, 8);
const productDb = `bench_long_${run}`;
const converse = await startConverseEndpoint({ respond });
for (const [name, value] of Object.entries(converse.environment)) process.env[name] = value;
// The server has its own client; this one reads what it stored.
const client = new MongoClient(mongo.uri);
await client.connect();
const localDir = await mkdtemp(join(tmpdir(), "threadwise-bench-long-"));
const config = loadConfig({ MONGODB_URI: mongo.uri, MONGODB_DB: productDb, MODEL_PROVIDER: "bedrock", BEDROCK_MODEL_ID: "bench", MODEL_COUNT_TOKENS: "false" });
const server = await startLocalServer(config, { port: 0, localDir, app: { logger: silentLogger, tools: [reportTool] } });
const token = await mintLocalToken(await loadOrCreateLocalKeys(localDir), { user: "bench" });
const auth = { authorization: `Bearer ${token}`, "content-type": "application/json" };

async function newConversation(): Promise<string> {
  const res = await fetch(`${server.url}/v1/conversations`, { method: "POST", headers: auth });
  return ((await res.json()) as { conversationId: string }).conversationId;
}
/** CPU time of this process (server, endpoint and client) per turn, in ms: unlike wall time, other processes on the machine do not count. */
let lastCpuMs = 0;
function cpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}
async function ask(conversationId: string, content: string): Promise<number> {
  const started = performance.now();
  const cpuStarted = cpuMs();
  const res = await fetch(`${server.url}/v1/conversations/${conversationId}/messages`, { method: "POST", headers: auth, body: JSON.stringify({ content }) });
  const body = (await res.json()) as { status?: string };
  if (res.status !== 200 || body.status !== "completed") throw new Error(`turn failed: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
  lastCpuMs = cpuMs() - cpuStarted;
  return performance.now() - started;
}

/** Writes what has been measured so far (each part adds its own), so a run stopped early still reports its parts. */
async function publish(): Promise<void> {
  const firstFull = productBuckets[1];
  const lastBucket = productBuckets[productBuckets.length - 1];
  const firstBucket = productBuckets[0];
  const s200 = productSnapshots[1];
  const sLast = productSnapshots[productSnapshots.length - 1];
  const stock200 = stockSnapshots.find((s) => s.turn === 2 * BUCKET);
  const rssGrowth = lastBucket.rssMb - firstBucket.rssMb;
  const ok = (pass: boolean) => (pass ? "met" : "**not met**");
  const targets = [
    [
      `bytes stored per turn, turns ${lastBucket.lastTurn - BUCKET + 1}–${lastBucket.lastTurn} against 101–200`,
      `${kb(lastBucket.storedPerTurn)} vs ${kb(firstFull.storedPerTurn)} (×${(lastBucket.storedPerTurn / firstFull.storedPerTurn).toFixed(2)})`,
      "within 1.2×",
      ok(lastBucket.storedPerTurn <= 1.2 * firstFull.storedPerTurn),
    ],
    [`largest document at turn ${sLast.turn}`, `${kb(sLast.largest)} (${sLast.largestIn})`, "under 256 KB", ok(sLast.largest < 256 * 1024)],
    [
      `server time per turn, p50 of turns ${lastBucket.lastTurn - BUCKET + 1}–${lastBucket.lastTurn} against 1–100`,
      `${lastBucket.p50.toFixed(0)} ms vs ${firstBucket.p50.toFixed(0)} ms (×${(lastBucket.p50 / firstBucket.p50).toFixed(2)})`,
      "within 1.3×",
      ok(lastBucket.p50 <= 1.3 * firstBucket.p50),
    ],
    [
      `CPU time per turn, p50 of turns ${lastBucket.lastTurn - BUCKET + 1}–${lastBucket.lastTurn} against 1–100 (wall time on a loaded machine aside)`,
      `${lastBucket.cpuP50.toFixed(0)} ms vs ${firstBucket.cpuP50.toFixed(0)} ms (×${(lastBucket.cpuP50 / firstBucket.cpuP50).toFixed(2)})`,
      "within 1.3×",
      ok(lastBucket.cpuP50 <= 1.3 * firstBucket.cpuP50),
    ],
    [`RSS growth over ${turns} turns (bucket 1 to the last)`, `${rssGrowth.toFixed(0)} MB`, "under 50 MB", ok(rssGrowth < 50)],
    ...(stock200
      ? [
          [
            "storage at 200 turns, stock against the product",
            `${mb(stock200.bytes)} vs ${mb(s200.bytes)} (×${(stock200.bytes / s200.bytes).toFixed(1)})`,
            "at least 100× less",
            ok(stock200.bytes >= 100 * s200.bytes),
          ],
        ]
      : []),
    ...(big
      ? [
          [
            `largest document of the ${formatCount(big.turns)}-turn conversation`,
            `${kb(big.largest)} (${big.largestIn})`,
            "under 256 KB",
            ok(big.largest < 256 * 1024),
          ],
          [
            `its next turn's server time (median of 5)`,
            `${quantile(big.nextTurnMs, 0.5).toFixed(0)} ms`,
            "under 500 ms",
            ok(quantile(big.nextTurnMs, 0.5) < 500),
          ],
        ]
      : []),
  ];

  function bucketTable(buckets: readonly Bucket[]): string {
    return markdownTable(
      ["turns", "stored per turn", "largest document", "server time p50", "p95", "CPU per turn p50", "RSS"],
      buckets.map((b) => [
        `${b.lastTurn - BUCKET + 1}–${b.lastTurn}`,
        kb(b.storedPerTurn),
        kb(b.largest),
        `${b.p50.toFixed(0)} ms`,
        `${b.p95.toFixed(0)} ms`,
        `${b.cpuP50.toFixed(0)} ms`,
        `${b.rssMb.toFixed(0)} MB`,
      ]),
      ["left", "right", "right", "right", "right", "right", "right"],
    );
  }

  const machine = `${cpus().length} × ${cpus()[0]?.model ?? "CPU"}, load average ${loadavg()[0].toFixed(1)} at the end`;
  const markdown = [
    "# Long-conversation benchmark",
    "",
    `\`npm run bench:long -- --turns ${turns} --stock-turns ${stockTurns} --big-turns ${bigTurns}\`` +
      `: one conversation of ${formatCount(turns)} turns through the HTTP API of the local server` +
      `, the real \`ChatBedrockConverse\` against the local Converse endpoint` +
      `, a tool call in 8 turns of 10 (outputs of 1–20 KB, those over 2,000 tokens offloaded).` +
      ` Stock LangGraph (\`createReactAgent\` + \`MongoDBSaver\`) in the same run for ${stockTurns} turns.` +
      ` ${machine}; the embedded MongoDB-compatible server.`,
    "",
    "## Against the issue's targets",
    "",
    markdownTable(["measure", "measured", "target", ""], targets, ["left", "right", "left", "left"]),
    "",
    "## Product, per bucket of 100 turns",
    "",
    bucketTable(productBuckets),
    "",
    "Stored (every document's BSON bytes): " +
      productSnapshots.map((s) => `${mb(s.bytes)} at turn ${s.turn} (largest document ${kb(s.largest)}, ${s.largestIn})`).join("; ") +
      ".",
    "",
    `## Stock (\`createReactAgent\` + \`MongoDBSaver\`)${stockStopped ? `, stopped at ${stockStopped}` : ""}`,
    "",
    bucketTable(stockBuckets),
    "",
    `Stored: ${stockSnapshots.map((s) => `${mb(s.bytes)} at turn ${s.turn} (largest document ${kb(s.largest)})`).join("; ")}.`,
    "",
    ...(big
      ? [
          `## A ${formatCount(big.turns)}-turn conversation`,
          "",
          `${formatCount(big.turns)} real turns (the offline model, in process, a tool call in one turn of five)` +
            ` written in ${big.writeSeconds.toFixed(0)} s; ` +
            `then 5 more through the HTTP API with the Converse endpoint: ${big.nextTurnMs.map((ms) => `${ms.toFixed(0)} ms`).join(", ")}. ` +
            `Its working set holds ${big.workingSetUsers} questions. ` +
            `The database then held ${mb(big.bytes)}, the largest document ${kb(big.largest)} (${big.largestIn}).`,
          "",
        ]
      : []),
    "![Bytes stored and server time per turn, by bucket of 100 turns](long-conversation.svg)",
    "",
  ];

  function chart(): string {
    const margin = { left: 70, right: 20, top: 40, bottom: 60 };
    const maxTurn = Math.max(turns, stockTurns);
    const step = maxTurn >= 1000 ? 500 : 100;
    const x: Axis = {
      min: 0,
      max: maxTurn,
      ticks: Array.from({ length: Math.floor(maxTurn / step) + 1 }, (_, i) => ({ value: i * step, label: formatCount(i * step) })),
      title: "turn",
    };
    const linear = (top: number, label: (v: number) => string): Axis => {
      const tickStep = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000].find((s) => top / s <= 6) ?? 10_000;
      const max = Math.ceil(top / tickStep) * tickStep;
      return { min: 0, max, ticks: Array.from({ length: max / tickStep + 1 }, (_, i) => ({ value: i * tickStep, label: label(i * tickStep) })) };
    };
    const points = (buckets: readonly Bucket[], pick: (b: Bucket) => number) => buckets.map((b) => ({ x: b.lastTurn, y: pick(b) }));
    const product = "#1f77b4";
    const stock = "#d62728";
    const writtenTop = Math.max(...[...productBuckets, ...stockBuckets].map((b) => b.storedPerTurn / 1024));
    const timeTop = Math.max(...[...productBuckets, ...stockBuckets].map((b) => b.p95));
    const panels: Panel[] = [
      {
        ...panelInRow(0, 480, 400, margin),
        title: "KB stored in MongoDB per turn",
        x,
        y: linear(writtenTop, (v) => `${v} KB`),
        series: [
          { points: points(stockBuckets, (b) => b.storedPerTurn / 1024), color: stock, markers: true },
          { points: points(productBuckets, (b) => b.storedPerTurn / 1024), color: product, markers: true },
        ],
      },
      {
        ...panelInRow(1, 480, 400, margin),
        title: "server time per turn (p50 solid, p95 dashed)",
        x,
        y: linear(timeTop, (v) => `${v} ms`),
        series: [
          { points: points(stockBuckets, (b) => b.p50), color: stock, markers: true },
          { points: points(stockBuckets, (b) => b.p95), color: stock, dash: "6 4" },
          { points: points(productBuckets, (b) => b.p50), color: product, markers: true },
          { points: points(productBuckets, (b) => b.p95), color: product, dash: "6 4" },
        ],
      },
    ];
    return lineChart({
      width: 960,
      height: 440,
      title: "One conversation through the HTTP API: product against stock LangGraph",
      panels,
      legend: {
        x: 70,
        y: 424,
        spacing: 320,
        entries: [
          { color: product, label: "product (working set, archive, ThreadwiseSaver)" },
          { color: stock, label: "stock createReactAgent + MongoDBSaver" },
        ],
      },
    });
  }

  process.stdout.write(`${markdown.join("\n")}\n`);
  if (values.write) await writeResults({ "long-conversation.md": markdown.join("\n"), "long-conversation.svg": chart() });
}

let big: { turns: number; writeSeconds: number; nextTurnMs: number[]; bytes: number; largest: number; largestIn: string; workingSetUsers: number } | undefined;

const stockDb = `bench_long_${run}_stock`;
const stockBuckets: Bucket[] = [];
const stockSnapshots: Snapshot[] = [];
let stockStopped: string | undefined;

// Part 1: the product through the HTTP API.
const productBuckets: Bucket[] = [];
const productSnapshots: Snapshot[] = [];
{
  const conversationId = await newConversation();
  let times: number[] = [];
  let cpu: number[] = [];
  let storedBefore = 0;
  for (let turn = 1; turn <= turns; turn++) {
    times.push(await ask(conversationId, question(turn)));
    cpu.push(lastCpuMs);
    // The endpoint keeps every request for tests' assertions; the benchmark does not need them.
    converse.requests.length = 0;
    if (turn % BUCKET === 0) {
      const rssMb = process.memoryUsage().rss / 1024 ** 2;
      const stored = await storage(client.db(productDb), PRODUCT_COLLECTIONS);
      productSnapshots.push({ turn, ...stored });
      productBuckets.push({
        lastTurn: turn,
        storedPerTurn: (stored.bytes - storedBefore) / BUCKET,
        p50: quantile(times, 0.5),
        p95: quantile(times, 0.95),
        cpuP50: quantile(cpu, 0.5),
        rssMb,
        largest: stored.largest,
      });
      storedBefore = stored.bytes;
      const b = productBuckets[productBuckets.length - 1];
      process.stderr.write(
        `product turn ${turn}: ${kb(b.storedPerTurn)} stored/turn, largest ${kb(stored.largest)}, ` +
          `p50 ${b.p50.toFixed(0)} ms, CPU ${b.cpuP50.toFixed(0)} ms, RSS ${rssMb.toFixed(0)} MB\n`,
      );
      times = [];
      cpu = [];
    }
  }
}

await publish();

// Part 2: stock LangGraph, the same model and tool, on its own database.
{
  const stockConverse = await startConverseEndpoint({ respond, contextWindowTokens: 50_000_000 });
  const stockClient = new MongoClient(mongo.uri);
  await stockClient.connect();
  const credentials = { accessKeyId: "AKIDLOCALBENCH", secretAccessKey: "local-bench-secret" };
  const bedrock = new BedrockRuntimeClient({ region: "us-east-1", endpoint: stockConverse.url, credentials });
  const llm = new ChatBedrockConverse({ model: "bench", region: "us-east-1", maxTokens: 1024, temperature: 0, client: bedrock });
  const salesReport = tool(async ({ rows }: { rows: number }) => report(rows), {
    name: "sales_report",
    description: reportTool.description,
    schema: z.object({ rows: z.number().int() }),
  });
  const agent = createReactAgent({ llm, tools: [salesReport], checkpointer: new MongoDBSaver({ client: stockClient, dbName: stockDb }) });
  const thread = { configurable: { thread_id: "stock" } };
  let times: number[] = [];
  let cpu: number[] = [];
  let storedBefore = 0;
  for (let turn = 1; turn <= stockTurns; turn++) {
    const started = performance.now();
    const cpuStarted = cpuMs();
    try {
      await agent.invoke({ messages: [new HumanMessage(question(turn))] }, thread);
    } catch (error) {
      stockStopped = `turn ${turn}: ${error instanceof Error ? error.message.slice(0, 120) : String(error)}`;
      break;
    }
    times.push(performance.now() - started);
    cpu.push(cpuMs() - cpuStarted);
    stockConverse.requests.length = 0;
    if (turn % BUCKET === 0) {
      const rssMb = process.memoryUsage().rss / 1024 ** 2;
      const stored = await storage(stockClient.db(stockDb), STOCK_COLLECTIONS);
      stockSnapshots.push({ turn, ...stored });
      stockBuckets.push({
        lastTurn: turn,
        storedPerTurn: (stored.bytes - storedBefore) / BUCKET,
        p50: quantile(times, 0.5),
        p95: quantile(times, 0.95),
        cpuP50: quantile(cpu, 0.5),
        rssMb,
        largest: stored.largest,
      });
      process.stderr.write(`stock turn ${turn}: ${kb((stored.bytes - storedBefore) / BUCKET)} stored/turn, p50 ${quantile(times, 0.5).toFixed(0)} ms\n`);
      storedBefore = stored.bytes;
      times = [];
      cpu = [];
    }
  }
  await stockClient.close();
  await stockConverse.close();
}

await publish();

// Part 3: a conversation of `bigTurns` real turns, then its next turn through the HTTP API.
if (bigTurns > 0) {
  const writer = await createApp(config, { mongoClient: client, tools: [reportTool], setup: "ensure", logger: silentLogger });
  const owner = apiPrincipal("bench");
  const conversationId = await newConversation();
  const caller = { principal: owner, roles: [] };
  const started = performance.now();
  for (let turn = 1; turn <= bigTurns; turn++) {
    const content = turn % 5 === 0 ? `Turn ${turn}: show me the sales report with ${REPORT_ROWS[turn % 10] || 40} rows.` : `Turn ${turn}: a short question.`;
    await writer.runner.run({ conversationId, caller, content, turnId: randomUUID() });
    converse.requests.length = 0;
    if (turn % 1000 === 0) process.stderr.write(`big conversation: ${turn} turns, ${((performance.now() - started) / 1000).toFixed(0)} s\n`);
  }
  const writeSeconds = (performance.now() - started) / 1000;
  const nextTurnMs: number[] = [];
  for (let k = 1; k <= 5; k++) nextTurnMs.push(await ask(conversationId, question(bigTurns + k)));
  const state = (await (await fetch(`${server.url}/v1/conversations/${conversationId}/state`, { headers: auth })).json()) as {
    messages: { role: string }[];
    archivedTurns: number;
  };
  const stored = await storage(client.db(productDb), PRODUCT_COLLECTIONS);
  big = { turns: bigTurns, writeSeconds, nextTurnMs, ...stored, workingSetUsers: state.messages.filter((m) => m.role === "user").length };
  await writer.close();
}

await server.close();
await client.close();
await converse.close();
await mongo.stop();
await publish();
