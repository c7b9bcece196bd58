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
 * and tool) for `--stock-turns` turns. A third part writes `--big-turns` real turns into another
 * conversation through the product's turn runner in process (no HTTP; the same model, endpoint and
 * tool, a tool call in one turn of five), so the thread is exactly as those turns leave it (saver,
 * archive, record, recall index), and every 1,000 turns times its next 3 turns through the HTTP API;
 * `--big-minutes` bounds how long it writes (30 by default; 0: no bound, which on the embedded server means days).
 *
 *   npm run bench:long [-- --turns 2000] [-- --stock-turns 200] [-- --big-turns 10000] [-- --big-minutes 30]
 *     [-- --parts product,stock,big (or report: only the report, from the parts' files)] [-- --write (results to bench/results)]
 *
 * With `--write`, each part keeps what it measured in `bench/results/long-conversation.<part>.json`
 * after every bucket, and the report (`long-conversation.md`, `.svg`) is made from every part found
 * there: the parts can run as separate processes (on a 2-core machine shared with others, the load
 * average is recorded with every bucket), and a run stopped early still reports what it measured.
 * Everything runs in this process (server, endpoint, driver) but the embedded MongoDB-compatible server.
 *
 * `--parts encryption` (not run by default) runs `--encryption-turns` turns of the same conversation with contents in clear
 * and encrypted (`--encryption-keys`: local key files, KMS through the stand-in of the tests, or both), one local server per
 * setting, turn for turn: encryption's share of a turn's time, CPU and bytes, early and late in the conversation.
 *
 *   npm run bench:long -- --parts encryption [-- --encryption-turns 300] [-- --encryption-keys local,kms] [-- --write]
 */
import { randomUUID } from "node:crypto";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
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
import { startKmsKeysEndpoint } from "../test/support/kms-keys-endpoint.js";
import { type Axis, lineChart, type Panel, panelInRow } from "./support/line-chart.js";
import { formatCount, markdownTable } from "./support/markdown.js";
import { RESULTS_DIR, writeResults } from "./support/results.js";

const BUCKET = 100;
/** Rows of the report per turn, cycled (about 32 bytes a row: 1 KB to 20 KB); 0: no tool call. */
const REPORT_ROWS = [40, 120, 0, 250, 620, 60, 180, 0, 400, 90];

const options = {
  turns: { type: "string", default: "2000" },
  "stock-turns": { type: "string", default: "200" },
  "big-turns": { type: "string", default: "10000" },
  "big-minutes": { type: "string", default: "30" },
  "encryption-turns": { type: "string", default: "300" },
  "encryption-keys": { type: "string", default: "local,kms" },
  parts: { type: "string", default: "product,stock,big" },
  write: { type: "boolean", default: false },
} as const;
const { values } = parseCliArgs(optionsUsage("bench:long", options), { options });
const turns = Number(values.turns);
const stockTurns = Number(values["stock-turns"]);
const bigTurns = Number(values["big-turns"]);
const bigMinutes = Number(values["big-minutes"]);
const encryptionTurns = Number(values["encryption-turns"]);
/** The encrypted arms of the `encryption` part, each run beside `off`: local key files, or KMS keys (the stand-in). */
const ENCRYPTION_ARMS = ["off", "local", "kms"] as const;
type EncryptionArm = (typeof ENCRYPTION_ARMS)[number];
const encryptionArms: EncryptionArm[] = ["off", ...values["encryption-keys"].split(",").map((k) => k.trim() as EncryptionArm)];
const PARTS = ["product", "stock", "big", "encryption"] as const;
type Part = (typeof PARTS)[number];
const parts = new Set(values.parts.split(",").map((p) => p.trim()));
if (![turns, stockTurns].every((n) => Number.isInteger(n) && n >= 2 * BUCKET) || !Number.isInteger(bigTurns) || bigTurns < 0 || !(bigMinutes >= 0)) {
  throw new Error(`--turns and --stock-turns must be integers of at least ${2 * BUCKET}, --big-turns an integer, --big-minutes a number`);
}
// `--parts report`: no part runs; the report is made from the parts' files.
parts.delete("report");
if ([...parts].some((p) => !PARTS.includes(p as Part))) throw new Error(`--parts lists some of ${PARTS.join(", ")}, or is report`);
if (!Number.isInteger(encryptionTurns) || encryptionTurns < 2 * BUCKET) throw new Error(`--encryption-turns must be an integer of at least ${2 * BUCKET}`);
if (encryptionArms.slice(1).some((k) => k === "off" || !ENCRYPTION_ARMS.includes(k))) throw new Error("--encryption-keys lists local, kms or both");
const command = (part: Part) =>
  `npm run bench:long -- --parts ${part} ` +
  (part === "product"
    ? `--turns ${turns}`
    : part === "stock"
      ? `--stock-turns ${stockTurns}`
      : part === "encryption"
        ? `--encryption-turns ${encryptionTurns} --encryption-keys ${encryptionArms.slice(1).join(",")}`
        : `--big-turns ${bigTurns} --big-minutes ${bigMinutes}`) +
  " --write";

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
  /** Median time per turn the server waited on the database (the union of its commands' intervals); absent in older files. */
  dbP50?: number;
  /** Median of server time less that wait, per turn. */
  ownP50?: number;
  rssMb: number;
  largest: number;
  /** The machine's 1-minute load average at the end of the bucket (shared machine: wall time depends on it). */
  load: number;
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
const server = await startLocalServer(config, { port: 0, localDir, monitorCommands: true, app: { logger: silentLogger, tools: [reportTool] } });
// Time the server spends waiting on the database: the union of its commands' intervals (several run at
// once), by request id (a command already in flight when this starts listening is left out), and not
// the local queue's polling of its own collection, which goes on between turns too.
const dbInFlight = new Set<number>();
let dbBusySince = 0;
let dbBusyMs = 0;
const serverClient = server.app.database.db.client;
serverClient.on("commandStarted", (e) => {
  if (e.command[e.commandName] === COLLECTIONS.turnJobs) return;
  if (dbInFlight.size === 0) dbBusySince = performance.now();
  dbInFlight.add(e.requestId);
});
const commandEnded = (e: { requestId: number }) => {
  if (dbInFlight.delete(e.requestId) && dbInFlight.size === 0) dbBusyMs += performance.now() - dbBusySince;
};
serverClient.on("commandSucceeded", commandEnded);
serverClient.on("commandFailed", commandEnded);
const dbBusyNow = () => dbBusyMs + (dbInFlight.size > 0 ? performance.now() - dbBusySince : 0);
/** The database time of the last turn asked, in ms. */
let lastDbMs = 0;
const token = await mintLocalToken(await loadOrCreateLocalKeys(localDir), { user: "bench" });
const auth = { authorization: `Bearer ${token}`, "content-type": "application/json" };

/** The database wait (the union of a client's command intervals, the local queue's polling left out) and the bytes of its write commands. */
function commandMonitor(monitored: MongoClient): { busyNow(): number; writtenBytes(): number } {
  const inFlight = new Set<number>();
  let busySince = 0;
  let busyMs = 0;
  let written = 0;
  monitored.on("commandStarted", (e) => {
    if (e.command[e.commandName] === COLLECTIONS.turnJobs) return;
    if (e.commandName === "insert" || e.commandName === "update" || e.commandName === "findAndModify") written += BSON.calculateObjectSize(e.command);
    if (inFlight.size === 0) busySince = performance.now();
    inFlight.add(e.requestId);
  });
  const ended = (e: { requestId: number }) => {
    if (inFlight.delete(e.requestId) && inFlight.size === 0) busyMs += performance.now() - busySince;
  };
  monitored.on("commandSucceeded", ended);
  monitored.on("commandFailed", ended);
  return { busyNow: () => busyMs + (inFlight.size > 0 ? performance.now() - busySince : 0), writtenBytes: () => written };
}

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
  const dbStarted = dbBusyNow();
  const res = await fetch(`${server.url}/v1/conversations/${conversationId}/messages`, { method: "POST", headers: auth, body: JSON.stringify({ content }) });
  const body = (await res.json()) as { status?: string };
  if (res.status !== 200 || body.status !== "completed") throw new Error(`turn failed: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
  lastCpuMs = cpuMs() - cpuStarted;
  lastDbMs = dbBusyNow() - dbStarted;
  return performance.now() - started;
}

interface PartResult {
  command: string;
  buckets: Bucket[];
  snapshots: Snapshot[];
  stopped?: string;
}
interface BigMark {
  /** Turns the conversation had when its next turns were timed. */
  turn: number;
  nextTurnMs: number[];
  nextTurnCpuMs: number[];
  /** The server's database wait in each of those turns; absent in older files. */
  nextTurnDbMs?: number[];
  bytes: number;
  largest: number;
  largestIn: string;
  workingSetUsers: number;
  load: number;
}
interface BigResult {
  command: string;
  /** Turns written so far, and in how many seconds. */
  turns: number;
  writeSeconds: number;
  marks: BigMark[];
  stopped?: string;
}
/** One arm's bucket of 100 turns in the `encryption` part. */
interface EncryptionBucket {
  lastTurn: number;
  p50: number;
  dbP50: number;
  ownP50: number;
  cpuP50: number;
  /** Mean BSON bytes of the server's write commands (insert, update, findAndModify) per turn. */
  writtenPerTurn: number;
  /** Growth of every document's BSON bytes over the bucket, per turn. */
  storedPerTurn: number;
  /** KMS requests over the bucket (the `kms` arm; 0 for the others). */
  kmsCalls: number;
  load: number;
}
interface EncryptionResult {
  command: string;
  arms: Partial<Record<EncryptionArm, EncryptionBucket[]>>;
  stopped?: string;
}
interface Results {
  product?: PartResult;
  stock?: PartResult;
  big?: BigResult;
  encryption?: EncryptionResult;
}
const results: Results = {};
const partFile = (part: Part) => join(RESULTS_DIR, `long-conversation.${part}.json`);

/** Keeps what a part measured so far (with `--write`), for the report and for a run of the other parts. */
async function save(part: Part): Promise<void> {
  if (values.write) await writeFile(partFile(part), `${JSON.stringify(results[part], null, 1)}\n`);
}

/** What the parts not run in this process measured, as their last `--write` left it. */
async function loadOtherParts(): Promise<Results> {
  const found: Results = { ...results };
  for (const part of PARTS) {
    if (parts.has(part)) continue;
    try {
      const loaded = JSON.parse(await readFile(partFile(part), "utf8"));
      (found as Record<Part, unknown>)[part] = loaded;
    } catch {
      // Not run yet.
    }
  }
  return found;
}

function bucketTable(buckets: readonly Bucket[]): string {
  return markdownTable(
    [
      "turns",
      "stored per turn",
      "largest document",
      "server time p50",
      "p95",
      "database wait p50",
      "server less database p50",
      "CPU per turn p50",
      "RSS",
      "load average",
    ],
    buckets.map((b) => [
      `${b.lastTurn - BUCKET + 1}–${b.lastTurn}`,
      kb(b.storedPerTurn),
      kb(b.largest),
      `${b.p50.toFixed(0)} ms`,
      `${b.p95.toFixed(0)} ms`,
      b.dbP50 === undefined ? "" : `${b.dbP50.toFixed(0)} ms`,
      b.ownP50 === undefined ? "" : `${b.ownP50.toFixed(0)} ms`,
      `${b.cpuP50.toFixed(0)} ms`,
      `${b.rssMb.toFixed(0)} MB`,
      b.load === undefined ? "" : b.load.toFixed(1),
    ]),
    ["left", "right", "right", "right", "right", "right", "right", "right", "right", "right"],
  );
}

const ok = (pass: boolean) => (pass ? "met" : "**not met**");

function targets({ product, stock, big }: Results): string[][] {
  const rows: string[][] = [];
  if (product && product.buckets.length >= 2) {
    const [firstBucket, secondBucket] = product.buckets;
    const last = product.buckets[product.buckets.length - 1];
    const lastSnap = product.snapshots[product.snapshots.length - 1];
    // Turn 100's bucket against the last one: the issue's "turn 2,000 within 1.3× of turn 100".
    rows.push(
      [
        `bytes stored per turn, turns ${last.lastTurn - BUCKET + 1}–${last.lastTurn} against 101–200`,
        `${kb(last.storedPerTurn)} vs ${kb(secondBucket.storedPerTurn)} (×${(last.storedPerTurn / secondBucket.storedPerTurn).toFixed(2)})`,
        "within 1.2×",
        ok(last.storedPerTurn <= 1.2 * secondBucket.storedPerTurn),
      ],
      [`largest document at turn ${lastSnap.turn}`, `${kb(lastSnap.largest)} (${lastSnap.largestIn})`, "under 256 KB", ok(lastSnap.largest < 256 * 1024)],
      [
        `server time per turn, p50 of turns ${last.lastTurn - BUCKET + 1}–${last.lastTurn} against 1–100 (wall time, shared machine)`,
        `${last.p50.toFixed(0)} ms vs ${firstBucket.p50.toFixed(0)} ms (×${(last.p50 / firstBucket.p50).toFixed(2)})`,
        "within 1.3×",
        ok(last.p50 <= 1.3 * firstBucket.p50),
      ],
      ...(last.ownP50 !== undefined && firstBucket.ownP50 !== undefined
        ? [
            [
              `server time less its database wait, p50 of turns ${last.lastTurn - BUCKET + 1}–${last.lastTurn} against 1–100`,
              `${last.ownP50.toFixed(0)} ms vs ${firstBucket.ownP50.toFixed(0)} ms (×${(last.ownP50 / firstBucket.ownP50).toFixed(2)})`,
              "within 1.3×",
              ok(last.ownP50 <= 1.3 * firstBucket.ownP50),
            ],
          ]
        : []),
      [
        `CPU time per turn, p50 of turns ${last.lastTurn - BUCKET + 1}–${last.lastTurn} against 1–100`,
        `${last.cpuP50.toFixed(0)} ms vs ${firstBucket.cpuP50.toFixed(0)} ms (×${(last.cpuP50 / firstBucket.cpuP50).toFixed(2)})`,
        "within 1.3×",
        ok(last.cpuP50 <= 1.3 * firstBucket.cpuP50),
      ],
      [
        `RSS growth over ${formatCount(last.lastTurn)} turns (bucket 1 to the last)`,
        `${(last.rssMb - firstBucket.rssMb).toFixed(0)} MB`,
        "under 50 MB",
        ok(last.rssMb - firstBucket.rssMb < 50),
      ],
    );
  }
  const p200 = product?.snapshots.find((s) => s.turn === 2 * BUCKET);
  const s200 = stock?.snapshots.find((s) => s.turn === 2 * BUCKET);
  if (p200 && s200) {
    rows.push([
      "storage at 200 turns, stock against the product",
      `${mb(s200.bytes)} vs ${mb(p200.bytes)} (×${(s200.bytes / p200.bytes).toFixed(1)})`,
      "at least 100× less",
      ok(s200.bytes >= 100 * p200.bytes),
    ]);
  }
  const mark = big?.marks[big.marks.length - 1];
  if (big && mark) {
    const median = quantile(mark.nextTurnMs, 0.5);
    rows.push(
      [
        `largest document of the ${formatCount(mark.turn)}-turn conversation`,
        `${kb(mark.largest)} (${mark.largestIn})`,
        "under 256 KB",
        ok(mark.largest < 256 * 1024),
      ],
      [
        `its next turn's server time (median of ${mark.nextTurnMs.length}; CPU ${quantile(mark.nextTurnCpuMs, 0.5).toFixed(0)} ms)`,
        `${median.toFixed(0)} ms`,
        "under 500 ms",
        ok(median < 500),
      ],
    );
    if (mark.nextTurnDbMs) {
      const own = quantile(
        mark.nextTurnMs.map((ms, i) => ms - (mark.nextTurnDbMs?.[i] ?? 0)),
        0.5,
      );
      rows.push([
        `its next turn's server time less its database wait (median of ${mark.nextTurnMs.length})`,
        `${own.toFixed(0)} ms`,
        "under 500 ms",
        ok(own < 500),
      ]);
    }
  }
  return rows;
}

const ARM_NAMES: Record<EncryptionArm, string> = {
  off: "off (`CONTENT_ENCRYPTION=off`)",
  local: "on, local key files (`CONTENT_KEYS=local`)",
  kms: "on, KMS (`CONTENT_KEYS=kms`, the stand-in)",
};

/** The `encryption` part: each arm per bucket, then each encrypted arm against `off`, early and late. */
function encryptionReport(encryption: EncryptionResult): string[] {
  const arms = ENCRYPTION_ARMS.filter((a) => encryption.arms[a]?.length);
  const off = encryption.arms.off ?? [];
  const ratio = (a: number, b: number) => (b > 0 ? `×${(a / b).toFixed(2)}` : "–");
  const lines = [
    `## Encryption's share of a turn${encryption.stopped ? ` (stopped: ${encryption.stopped})` : ""}`,
    "",
    `The same conversation through the HTTP API of ${arms.length} local servers in this process, one per setting, each on its own database,` +
      " turn for turn in a rotating order so that each sees the same load; everything else as above. Written: the BSON bytes of the server's" +
      " write commands per turn (mean); stored: the growth of every document's bytes. KMS is the stand-in of the tests" +
      " (`test/support/kms-keys-endpoint.ts`) through the real `@aws-sdk/client-kms`, in this process.",
    "",
    markdownTable(
      [
        "setting",
        "turns",
        "server time p50",
        "database wait p50",
        "server less database p50",
        "CPU per turn p50",
        "written per turn",
        "stored per turn",
        "KMS requests",
        "load",
      ],
      arms.flatMap((arm) =>
        (encryption.arms[arm] ?? []).map((b) => [
          ARM_NAMES[arm],
          `${b.lastTurn - BUCKET + 1}–${b.lastTurn}`,
          `${b.p50.toFixed(0)} ms`,
          `${b.dbP50.toFixed(0)} ms`,
          `${b.ownP50.toFixed(0)} ms`,
          `${b.cpuP50.toFixed(0)} ms`,
          kb(b.writtenPerTurn),
          kb(b.storedPerTurn),
          arm === "kms" ? String(b.kmsCalls) : "",
          b.load.toFixed(1),
        ]),
      ),
      ["left", "left", "right", "right", "right", "right", "right", "right", "right", "right"],
    ),
    "",
  ];
  if (off.length >= 2) {
    const rows: string[][] = [];
    for (const arm of arms.filter((a) => a !== "off")) {
      const buckets = encryption.arms[arm] ?? [];
      for (const i of [0, Math.min(buckets.length, off.length) - 1]) {
        const [on, clear] = [buckets[i], off[i]];
        if (!on || !clear) continue;
        rows.push([
          ARM_NAMES[arm],
          `${on.lastTurn - BUCKET + 1}–${on.lastTurn}`,
          ratio(on.p50, clear.p50),
          `${ratio(on.ownP50, clear.ownP50)} (${(on.ownP50 - clear.ownP50).toFixed(0)} ms)`,
          `${ratio(on.cpuP50, clear.cpuP50)} (${(on.cpuP50 - clear.cpuP50).toFixed(0)} ms)`,
          ratio(on.writtenPerTurn, clear.writtenPerTurn),
          ratio(on.storedPerTurn, clear.storedPerTurn),
        ]);
      }
    }
    lines.push(
      "Encrypted against off, in the same run (the first bucket and the last: flat when encryption's cost does not grow with the conversation):",
      "",
      markdownTable(["setting", "turns", "server time p50", "server less database p50", "CPU per turn p50", "written per turn", "stored per turn"], rows, [
        "left",
        "left",
        "right",
        "right",
        "right",
        "right",
        "right",
      ]),
      "",
    );
  }
  return lines;
}

/** Writes the report from every part measured so far (this process's and, with `--write`, the others' files). */
async function publish(): Promise<void> {
  const all = await loadOtherParts();
  const { product, stock, big, encryption } = all;
  const machine = `${cpus().length} × ${cpus()[0]?.model ?? "CPU"}, shared; load average ${loadavg()[0].toFixed(1)} when this report was written`;
  const markdown = [
    "# Long-conversation benchmark",
    "",
    "One conversation through the HTTP API of the local server, the real `ChatBedrockConverse` against the local Converse endpoint" +
      ", a tool call in 8 turns of 10 (outputs of 1–20 KB, those over 2,000 tokens offloaded)" +
      "; stock LangGraph (`createReactAgent` + `MongoDBSaver`) with the same model, endpoint and tool" +
      `; a conversation written by the product's turn runner and timed every 1,000 turns. ${machine}; the embedded MongoDB-compatible server.` +
      " Server time is the HTTP request's wall time (the scripted model answers in about a millisecond);" +
      " the database wait is the union of the intervals of the server's MongoDB commands during the request (the local queue's polling left out);" +
      " CPU is this process's (server, endpoint and client), which other processes on the machine do not inflate.",
    "",
    "Commands (each part may run as its own process; the report is made from every part's file):",
    "",
    ...PARTS.map((part) => all[part])
      .filter((r) => r !== undefined)
      .map((r) => `- \`${r.command}\``),
    "",
    "## Against the issue's targets",
    "",
    markdownTable(["measure", "measured", "target", ""], targets(all), ["left", "right", "left", "left"]),
    "",
  ];
  if (product) {
    markdown.push(
      `## Product, per bucket of 100 turns${product.stopped ? ` (stopped: ${product.stopped})` : ""}`,
      "",
      bucketTable(product.buckets),
      "",
      "Stored (every document's BSON bytes): " +
        product.snapshots
          .filter((s, i) => i < 2 || s.turn % 500 === 0 || i === product.snapshots.length - 1)
          .map((s) => `${mb(s.bytes)} at turn ${s.turn} (largest document ${kb(s.largest)}, ${s.largestIn})`)
          .join("; ") +
        ".",
      "",
    );
  }
  if (stock) {
    markdown.push(
      `## Stock (\`createReactAgent\` + \`MongoDBSaver\`)${stock.stopped ? `, stopped at ${stock.stopped}` : ""}`,
      "",
      bucketTable(stock.buckets),
      "",
      `Stored: ${stock.snapshots.map((s) => `${mb(s.bytes)} at turn ${s.turn} (largest document ${kb(s.largest)})`).join("; ")}.`,
      "",
    );
  }
  if (big && big.marks.length > 0) {
    markdown.push(
      `## A long conversation written by the turn runner${big.stopped ? ` (stopped: ${big.stopped})` : ""}`,
      "",
      `${formatCount(big.turns)} real turns (the turn runner in process, the same model and endpoint, a tool call in one turn of five)` +
        ` written in ${big.writeSeconds.toFixed(0)} s; every 1,000 turns, 3 more through the HTTP API:`,
      "",
      markdownTable(
        ["turns before", "next turns' server time", "database wait", "CPU", "stored", "largest document", "questions in the working set", "load average"],
        big.marks.map((m) => [
          formatCount(m.turn),
          m.nextTurnMs.map((ms) => `${ms.toFixed(0)} ms`).join(", "),
          m.nextTurnDbMs?.map((ms) => `${ms.toFixed(0)} ms`).join(", ") ?? "",
          m.nextTurnCpuMs.map((ms) => `${ms.toFixed(0)} ms`).join(", "),
          mb(m.bytes),
          `${kb(m.largest)} (${m.largestIn})`,
          String(m.workingSetUsers),
          m.load.toFixed(1),
        ]),
        ["right", "right", "right", "right", "right", "right", "right", "right"],
      ),
      "",
    );
  }
  if (encryption) markdown.push(...encryptionReport(encryption));
  markdown.push("![Bytes stored and server time per turn, by bucket of 100 turns](long-conversation.svg)", "");

  function chart(): string {
    const productBuckets = product?.buckets ?? [];
    const stockBuckets = stock?.buckets ?? [];
    const margin = { left: 70, right: 20, top: 64, bottom: 60 };
    const maxTurn = Math.max(BUCKET, ...[...productBuckets, ...stockBuckets].map((b) => b.lastTurn));
    const step = maxTurn >= 1000 ? 500 : 100;
    const x: Axis = {
      min: 0,
      max: maxTurn,
      ticks: Array.from({ length: Math.floor(maxTurn / step) + 1 }, (_, i) => ({ value: i * step, label: formatCount(i * step) })),
      title: "turn",
    };
    const points = (buckets: readonly Bucket[], pick: (b: Bucket) => number) => buckets.map((b) => ({ x: b.lastTurn, y: pick(b) }));
    const productColor = "#1f77b4";
    const stockColor = "#d62728";
    const writtenTop = Math.max(1, ...[...productBuckets, ...stockBuckets].map((b) => b.storedPerTurn / 1024));
    const timeTop = Math.max(1, ...[...productBuckets, ...stockBuckets].map((b) => b.p95));
    // Log scales: stock's megabytes and the product's kilobytes, the server's own time (tens of ms)
    // and the database wait (seconds), each in one picture.
    const logAxis = (top: number, label: (v: number) => string): Axis => {
      const ticks = [10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 20_000, 50_000].filter((v) => v <= top * 2);
      return { scale: "log", min: 10, max: ticks[ticks.length - 1] ?? 1000, ticks: ticks.map((v) => ({ value: v, label: label(v) })) };
    };
    const timeAxis = logAxis(timeTop, (v) => (v >= 1000 ? `${v / 1000} s` : `${v} ms`));
    const panels: Panel[] = [
      {
        ...panelInRow(0, 480, 400, margin),
        title: "stored in MongoDB per turn (log scale)",
        x,
        y: logAxis(writtenTop, (v) => (v >= 1000 ? `${v / 1000} MB` : `${v} KB`)),
        series: [
          { points: points(stockBuckets, (b) => b.storedPerTurn / 1024), color: stockColor, markers: true },
          { points: points(productBuckets, (b) => b.storedPerTurn / 1024), color: productColor, markers: true },
        ],
      },
      {
        ...panelInRow(1, 480, 400, margin),
        title: "server time per turn, p50 (log scale)",
        note: "dashed: p95; thin: less its database wait; dotted: CPU",
        x,
        y: timeAxis,
        series: [
          { points: points(stockBuckets, (b) => b.p50), color: stockColor, markers: true },
          { points: points(stockBuckets, (b) => b.p95), color: stockColor, dash: "6 4" },
          { points: points(stockBuckets, (b) => b.cpuP50), color: stockColor, dash: "2 3" },
          { points: points(productBuckets, (b) => b.p50), color: productColor, markers: true },
          { points: points(productBuckets, (b) => b.p95), color: productColor, dash: "6 4" },
          { points: points(productBuckets, (b) => b.cpuP50), color: productColor, dash: "2 3" },
          {
            points: points(
              productBuckets.filter((b) => b.ownP50 !== undefined),
              (b) => b.ownP50 ?? 0,
            ),
            color: productColor,
            width: 1,
          },
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
          { color: productColor, label: "product (working set, archive, ThreadwiseSaver)" },
          { color: stockColor, label: "stock createReactAgent + MongoDBSaver" },
        ],
      },
    });
  }

  process.stdout.write(`${markdown.join("\n")}\n`);
  if (values.write) await writeResults({ "long-conversation.md": markdown.join("\n"), "long-conversation.svg": chart() });
}

function bucketOf(turn: number, times: number[], cpu: number[], db: number[], stored: Snapshot, storedBefore: number): Bucket {
  return {
    lastTurn: turn,
    storedPerTurn: (stored.bytes - storedBefore) / BUCKET,
    p50: quantile(times, 0.5),
    p95: quantile(times, 0.95),
    cpuP50: quantile(cpu, 0.5),
    ...(db.length === times.length
      ? {
          dbP50: quantile(db, 0.5),
          ownP50: quantile(
            times.map((t, i) => t - db[i]),
            0.5,
          ),
        }
      : {}),
    rssMb: process.memoryUsage().rss / 1024 ** 2,
    largest: stored.largest,
    load: loadavg()[0],
  };
}

const stockDb = `bench_long_${run}_stock`;

// Part 1: the product through the HTTP API.
if (parts.has("product")) {
  const part: PartResult = { command: command("product"), buckets: [], snapshots: [] };
  results.product = part;
  const conversationId = await newConversation();
  let times: number[] = [];
  let cpu: number[] = [];
  let db: number[] = [];
  let storedBefore = 0;
  for (let turn = 1; turn <= turns; turn++) {
    times.push(await ask(conversationId, question(turn)));
    cpu.push(lastCpuMs);
    db.push(lastDbMs);
    // The endpoint keeps every request for tests' assertions; the benchmark does not need them.
    converse.requests.length = 0;
    if (turn % BUCKET === 0) {
      const snapshot = { turn, ...(await storage(client.db(productDb), PRODUCT_COLLECTIONS)) };
      part.snapshots.push(snapshot);
      const b = bucketOf(turn, times, cpu, db, snapshot, storedBefore);
      part.buckets.push(b);
      storedBefore = snapshot.bytes;
      process.stderr.write(
        `product turn ${turn}: ${kb(b.storedPerTurn)} stored/turn, largest ${kb(b.largest)}, ` +
          `p50 ${b.p50.toFixed(0)} ms (database ${b.dbP50?.toFixed(0)} ms, the rest ${b.ownP50?.toFixed(0)} ms), CPU ${b.cpuP50.toFixed(0)} ms, ` +
          `RSS ${b.rssMb.toFixed(0)} MB, load ${b.load.toFixed(1)}\n`,
      );
      times = [];
      cpu = [];
      db = [];
      await save("product");
      if (turn % (5 * BUCKET) === 0 || turn === turns) await publish();
    }
  }
}

// Part 2: stock LangGraph, the same model and tool, on its own database.
if (parts.has("stock")) {
  const part: PartResult = { command: command("stock"), buckets: [], snapshots: [] };
  results.stock = part;
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
      part.stopped = `turn ${turn}: ${error instanceof Error ? error.message.slice(0, 120) : String(error)}`;
      break;
    }
    times.push(performance.now() - started);
    cpu.push(cpuMs() - cpuStarted);
    stockConverse.requests.length = 0;
    if (turn % BUCKET === 0) {
      const snapshot = { turn, ...(await storage(stockClient.db(stockDb), STOCK_COLLECTIONS)) };
      part.snapshots.push(snapshot);
      const b = bucketOf(turn, times, cpu, [], snapshot, storedBefore);
      part.buckets.push(b);
      process.stderr.write(`stock turn ${turn}: ${kb(b.storedPerTurn)} stored/turn, p50 ${b.p50.toFixed(0)} ms, load ${b.load.toFixed(1)}\n`);
      storedBefore = snapshot.bytes;
      times = [];
      cpu = [];
      await save("stock");
    }
  }
  await save("stock");
  await stockClient.close();
  await stockConverse.close();
  await publish();
}

// Part 3: a conversation of `bigTurns` real turns, timed through the HTTP API every 1,000 turns.
if (parts.has("big") && bigTurns > 0) {
  const part: BigResult = { command: command("big"), turns: 0, writeSeconds: 0, marks: [] };
  results.big = part;
  const writer = await createApp(config, { mongoClient: client, tools: [reportTool], setup: "ensure", logger: silentLogger });
  const owner = apiPrincipal("bench");
  const conversationId = await newConversation();
  const caller = { principal: owner, roles: [] };
  const started = performance.now();
  const deadline = bigMinutes > 0 ? started + bigMinutes * 60_000 : Infinity;
  let writeMs = 0;
  for (let turn = 1; turn <= bigTurns; turn++) {
    const content = turn % 5 === 0 ? `Turn ${turn}: show me the sales report with ${REPORT_ROWS[turn % 10] || 40} rows.` : `Turn ${turn}: a short question.`;
    const turnStarted = performance.now();
    await writer.runner.run({ conversationId, caller, content, turnId: randomUUID() });
    writeMs += performance.now() - turnStarted;
    converse.requests.length = 0;
    part.turns = turn;
    part.writeSeconds = writeMs / 1000;
    const outOfTime = performance.now() > deadline;
    if (turn % 1000 === 0 || turn === bigTurns || outOfTime) {
      const nextTurnMs: number[] = [];
      const nextTurnCpuMs: number[] = [];
      const nextTurnDbMs: number[] = [];
      for (let k = 1; k <= 3; k++) {
        nextTurnMs.push(await ask(conversationId, question(turn * 10 + k)));
        nextTurnCpuMs.push(lastCpuMs);
        nextTurnDbMs.push(lastDbMs);
      }
      converse.requests.length = 0;
      const state = (await (await fetch(`${server.url}/v1/conversations/${conversationId}/state`, { headers: auth })).json()) as {
        messages: { role: string }[];
      };
      const stored = await storage(client.db(productDb), PRODUCT_COLLECTIONS);
      part.marks.push({
        turn,
        nextTurnMs,
        nextTurnCpuMs,
        nextTurnDbMs,
        ...stored,
        workingSetUsers: state.messages.filter((m) => m.role === "user").length,
        load: loadavg()[0],
      });
      process.stderr.write(
        `big conversation: ${turn} turns in ${part.writeSeconds.toFixed(0)} s; ` +
          `next turns ${nextTurnMs.map((ms) => ms.toFixed(0)).join(", ")} ms, largest ${kb(stored.largest)}\n`,
      );
      await save("big");
      await publish();
    }
    if (outOfTime) {
      part.stopped = `after ${formatCount(turn)} turns, the --big-minutes ${bigMinutes} budget`;
      await save("big");
      break;
    }
  }
  await writer.close();
}

// Part 4: encryption's share, the same conversation with contents encrypted and in clear, turn for turn.
if (parts.has("encryption")) {
  const part: EncryptionResult = { command: command("encryption"), arms: {} };
  results.encryption = part;
  const kmsEndpoint = encryptionArms.includes("kms") ? await startKmsKeysEndpoint() : undefined;
  // `CONTENT_KEYS=kms` makes its KMS client as in AWS (`new KMS({})`): the SDK's endpoint variable points it at the stand-in.
  if (kmsEndpoint) process.env.AWS_ENDPOINT_URL_KMS = kmsEndpoint.url;
  const arms = [];
  for (const arm of encryptionArms) {
    const dbName = `${productDb}_encryption_${arm}`;
    const armConfig = loadConfig({
      MONGODB_URI: mongo.uri,
      MONGODB_DB: dbName,
      MODEL_PROVIDER: "bedrock",
      BEDROCK_MODEL_ID: "bench",
      MODEL_COUNT_TOKENS: "false",
      CONTENT_ENCRYPTION: arm === "off" ? "off" : "on",
      CONTENT_KEYS: arm === "kms" ? "kms" : "local",
    });
    const armServer = await startLocalServer(armConfig, { port: 0, localDir, monitorCommands: true, app: { logger: silentLogger, tools: [reportTool] } });
    const monitor = commandMonitor(armServer.app.database.db.client);
    const res = await fetch(`${armServer.url}/v1/conversations`, { method: "POST", headers: auth });
    const conversationId = ((await res.json()) as { conversationId: string }).conversationId;
    arms.push({
      arm,
      dbName,
      server: armServer,
      monitor,
      conversationId,
      times: [] as number[],
      cpu: [] as number[],
      db: [] as number[],
      written: [] as number[],
    });
  }
  const storedBefore = new Map<EncryptionArm, number>();
  let kmsBefore = 0;
  try {
    for (let turn = 1; turn <= encryptionTurns; turn++) {
      // A rotating order: no setting always runs first, on a machine just warmed or cooled by the others.
      for (let k = 0; k < arms.length; k++) {
        const a = arms[(turn + k) % arms.length];
        const started = performance.now();
        const cpuStarted = cpuMs();
        const dbStarted = a.monitor.busyNow();
        const writtenStarted = a.monitor.writtenBytes();
        const res = await fetch(`${a.server.url}/v1/conversations/${a.conversationId}/messages`, {
          method: "POST",
          headers: auth,
          body: JSON.stringify({ content: question(turn) }),
        });
        const body = (await res.json()) as { status?: string };
        if (res.status !== 200 || body.status !== "completed")
          throw new Error(`${a.arm} turn ${turn} failed: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
        a.times.push(performance.now() - started);
        a.cpu.push(cpuMs() - cpuStarted);
        a.db.push(a.monitor.busyNow() - dbStarted);
        a.written.push(a.monitor.writtenBytes() - writtenStarted);
      }
      converse.requests.length = 0;
      if (turn % BUCKET === 0) {
        const kmsNow = kmsEndpoint?.calls.length ?? 0;
        for (const a of arms) {
          const stored = await storage(client.db(a.dbName), PRODUCT_COLLECTIONS);
          const bucket: EncryptionBucket = {
            lastTurn: turn,
            p50: quantile(a.times, 0.5),
            dbP50: quantile(a.db, 0.5),
            ownP50: quantile(
              a.times.map((t, i) => t - a.db[i]),
              0.5,
            ),
            cpuP50: quantile(a.cpu, 0.5),
            writtenPerTurn: a.written.reduce((x, y) => x + y, 0) / a.written.length,
            storedPerTurn: (stored.bytes - (storedBefore.get(a.arm) ?? 0)) / BUCKET,
            kmsCalls: a.arm === "kms" ? kmsNow - kmsBefore : 0,
            load: loadavg()[0],
          };
          storedBefore.set(a.arm, stored.bytes);
          (part.arms[a.arm] ??= []).push(bucket);
          process.stderr.write(
            `encryption ${a.arm} turn ${turn}: p50 ${bucket.p50.toFixed(0)} ms ` +
              `(database ${bucket.dbP50.toFixed(0)} ms, the rest ${bucket.ownP50.toFixed(0)} ms), ` +
              `CPU ${bucket.cpuP50.toFixed(0)} ms, written ${kb(bucket.writtenPerTurn)}, stored ${kb(bucket.storedPerTurn)}, KMS ${bucket.kmsCalls}\n`,
          );
          a.times = [];
          a.cpu = [];
          a.db = [];
          a.written = [];
        }
        kmsBefore = kmsNow;
        await save("encryption");
      }
    }
  } catch (error) {
    part.stopped = error instanceof Error ? error.message.slice(0, 160) : String(error);
    await save("encryption");
  }
  for (const a of arms) await a.server.close();
  await kmsEndpoint?.close();
  await publish();
}

await server.close();
await client.close();
await converse.close();
await mongo.stop();
await publish();
