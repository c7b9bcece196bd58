/**
 * PART BENCHMARK: it drives the checkpointer alone through a compiled graph with scripted messages,
 * not the product's turn path (HTTP API, view, record, recall, events). The product-path figures
 * are `npm run bench:long` (issue 28); quote these only as the checkpointer's share.
 *
 * Storage benchmark: bytes MongoDB holds for one thread as it grows, for the product's
 * checkpointing (ThreadwiseSaver, each turn fenced with a new epoch as the turn runner does,
 * pruned after every turn, large tool outputs offloaded to `artifacts`) and for stock
 * MongoDBSaver use (default durability, no pruning, outputs inline),
 * driving the same compiled LangGraph StateGraph with scripted messages (no LLM).
 *
 *   npm run bench:storage [-- --turns 200 --stock-turns 50] [-- --write (results to bench/results)]
 *
 * Bytes are the BSON size of every document of the thread, from `BSON.calculateObjectSize`
 * (the embedded server has no collStats). Persistence time is the time spent in the
 * checkpointer's put/putWrites, plus, for the product, its artifact inserts and prune.
 */
import { randomUUID } from "node:crypto";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { MongoDBSaver } from "@langchain/langgraph-checkpoint-mongodb";
import { BSON, MongoClient, type Db } from "mongodb";
import { optionsUsage, parseCliArgs } from "../lib/local/cli-args.js";
import { startEmbeddedMongo, type EmbeddedMongo } from "../lib/local/embedded-mongo.js";
import { DEFAULT_MAX_DOCUMENT_BYTES } from "../lib/store/checkpoint/document-size.js";
import { ThreadwiseSaver } from "../lib/store/threadwise-saver.js";
import { DEFAULT_CHECKPOINTS_KEPT } from "../lib/config/database-config.js";
import { type Axis, lineChart, type Panel } from "./support/line-chart.js";
import { evaluatePolynomial, fitPolynomial, median, type Point, rSquared } from "./support/statistics.js";
import { writeResults } from "./support/results.js";

/** Tool output sizes in KB, cycled turn after turn: 2 to 100 KB, 31 KB on average. */
const TOOL_OUTPUT_KB = [2, 5, 10, 20, 50, 100];
/** Characters of an offloaded output kept in the ToolMessage. */
const PREVIEW_CHARS = 200;
/** Turns at which both runs are measured and reported. */
const REPORTED_TURNS = [10, 50, 200];
/** Interval between measurements drawn in the chart. */
const SAMPLE_EVERY = 10;

interface Sample {
  turn: number;
  bytes: number;
  documents: number;
  /** The thread's largest document, in BSON bytes. */
  largestDocument: number;
  /** Median persistence time per turn over the turns since the previous sample. */
  persistenceMs: number;
}

interface Run {
  name: string;
  samples: Sample[];
}

/** Deterministic text of `bytes` ASCII characters, the shape of a tabular tool result. */
function toolOutput(turn: number, bytes: number): string {
  const row = `| ${turn} | customer-${turn % 97} | region-${turn % 7} | 1234.56 | 2026-11-30 |\n`;
  return row.repeat(Math.ceil(bytes / row.length)).slice(0, bytes);
}

/** Accumulates the time spent in the saver's writes. */
function instrument(saver: BaseCheckpointSaver, meter: { ms: number }): void {
  const put = saver.put.bind(saver);
  const putWrites = saver.putWrites.bind(saver);
  saver.put = async (...args) => {
    const start = performance.now();
    try {
      return await put(...args);
    } finally {
      meter.ms += performance.now() - start;
    }
  };
  saver.putWrites = async (...args) => {
    const start = performance.now();
    try {
      return await putWrites(...args);
    } finally {
      meter.ms += performance.now() - start;
    }
  };
}

type ToolResult = (threadId: string, toolCallId: string, output: string) => Promise<string>;

/** Agent and tool nodes with scripted messages: one tool call per question, then an answer. */
function scriptedGraph(saver: BaseCheckpointSaver, toolResult: ToolResult) {
  const lastOf = (messages: BaseMessage[]) => messages[messages.length - 1];
  const turnOf = (messages: BaseMessage[]) => messages.filter((m) => HumanMessage.isInstance(m)).length;
  return new StateGraph(MessagesAnnotation)
    .addNode("agent", ({ messages }) => {
      const turn = turnOf(messages);
      if (HumanMessage.isInstance(lastOf(messages))) {
        const call = { id: `call_${turn}`, name: "query_sales", args: { quarter: `Q${(turn % 4) + 1}`, region: turn % 7 } };
        return { messages: [new AIMessage({ content: "Let me look that up.", tool_calls: [call] })] };
      }
      return { messages: [new AIMessage(`Turn ${turn}: revenue in region ${turn % 7} grew by ${turn % 13}% on the quarter.`)] };
    })
    .addNode("tools", async ({ messages }, config) => {
      const turn = turnOf(messages);
      const callId = (lastOf(messages) as AIMessage).tool_calls?.[0]?.id ?? "";
      const kb = TOOL_OUTPUT_KB[(turn - 1) % TOOL_OUTPUT_KB.length];
      const threadId = String(config.configurable?.thread_id);
      const content = await toolResult(threadId, callId, toolOutput(turn, kb * 1024));
      return { messages: [new ToolMessage({ content, tool_call_id: callId, name: "query_sales" })] };
    })
    .addEdge(START, "agent")
    .addConditionalEdges("agent", ({ messages }) => ((lastOf(messages) as AIMessage).tool_calls?.length ? "tools" : END))
    .addEdge("tools", "agent")
    .compile({ checkpointer: saver });
}

async function threadBytes(db: Db, collections: string[], threadId: string): Promise<{ bytes: number; documents: number; largestDocument: number }> {
  let bytes = 0;
  let documents = 0;
  let largestDocument = 0;
  for (const name of collections) {
    for await (const doc of db.collection(name).find({ thread_id: threadId })) {
      const size = BSON.calculateObjectSize(doc);
      bytes += size;
      documents += 1;
      largestDocument = Math.max(largestDocument, size);
    }
  }
  return { bytes, documents, largestDocument };
}

interface Subject {
  name: string;
  db: Db;
  saver: BaseCheckpointSaver;
  collections: string[];
  toolResult: ToolResult;
  /** Runs before a turn; returns what the turn adds to `configurable`. */
  beforeTurn: (threadId: string, turn: number) => Promise<Record<string, unknown>>;
  afterTurn: (threadId: string, turn: number) => Promise<void>;
  meter: { ms: number };
}

async function timed<T>(meter: { ms: number }, work: () => Promise<T>): Promise<T> {
  const start = performance.now();
  try {
    return await work();
  } finally {
    meter.ms += performance.now() - start;
  }
}

/**
 * ThreadwiseSaver, each turn claiming the thread with a new fence epoch and writing under it (as
 * the turn runner does), pruned after every turn, tool outputs stored once in `artifacts`.
 */
function productSubject(client: MongoClient, dbName: string): Subject {
  const db = client.db(dbName);
  const meter = { ms: 0 };
  const saver = new ThreadwiseSaver({ client, dbName });
  instrument(saver, meter);
  const artifacts = db.collection<{ _id: string; thread_id: string; tool_call_id: string; bytes: number; content: string }>("artifacts");
  return {
    name: "product",
    db,
    saver,
    meter,
    collections: [
      saver.checkpointCollectionName,
      saver.checkpointWritesCollectionName,
      saver.checkpointBlobsCollectionName,
      saver.checkpointThreadsCollectionName,
      "artifacts",
    ],
    async toolResult(threadId, toolCallId, output) {
      const handle = randomUUID();
      await timed(meter, () => artifacts.insertOne({ _id: handle, thread_id: threadId, tool_call_id: toolCallId, bytes: output.length, content: output }));
      return `${output.slice(0, PREVIEW_CHARS)}\n[${output.length} bytes, stored as artifact ${handle}]`;
    },
    async beforeTurn(threadId, turn) {
      await timed(meter, () => saver.claimThread(threadId, turn));
      return { fence_epoch: turn };
    },
    async afterTurn(threadId, turn) {
      await timed(meter, () => saver.prune(threadId, { fenceEpoch: turn }));
    },
  };
}

/** Stock MongoDBSaver as documented: default durability, no pruning, tool outputs inline. */
function stockSubject(client: MongoClient, dbName: string): Subject {
  const meter = { ms: 0 };
  const saver = new MongoDBSaver({ client, dbName });
  instrument(saver, meter);
  return {
    name: "stock",
    db: client.db(dbName),
    saver,
    meter,
    collections: [saver.checkpointCollectionName, saver.checkpointWritesCollectionName],
    toolResult: async (_threadId, _toolCallId, output) => output,
    beforeTurn: async () => ({}),
    afterTurn: async () => undefined,
  };
}

interface Runner {
  subject: Subject;
  turns: number;
  threadId: string;
  graph: ReturnType<typeof scriptedGraph>;
  run: Run;
  turnTimes: number[];
}

function runner(subject: Subject, turns: number): Runner {
  const graph = scriptedGraph(subject.saver, subject.toolResult);
  return { subject, turns, threadId: randomUUID(), graph, run: { name: subject.name, samples: [] }, turnTimes: [] };
}

async function runTurn(r: Runner, turn: number): Promise<void> {
  const before = r.subject.meter.ms;
  const extra = await r.subject.beforeTurn(r.threadId, turn);
  const configurable = { thread_id: r.threadId, ...extra };
  await r.graph.invoke({ messages: [new HumanMessage(`Question ${turn}: how did sales do?`)] }, { configurable });
  await r.subject.afterTurn(r.threadId, turn);
  r.turnTimes.push(r.subject.meter.ms - before);
  if (turn % SAMPLE_EVERY === 0 || REPORTED_TURNS.includes(turn) || turn === r.turns) {
    const size = await threadBytes(r.subject.db, r.subject.collections, r.threadId);
    r.run.samples.push({ turn, ...size, persistenceMs: median(r.turnTimes) });
    r.turnTimes = [];
    process.stderr.write(`${r.subject.name}: turn ${turn}, ${formatBytes(size.bytes)}, ${size.documents} documents\n`);
  }
}

/** Alternates the runs turn by turn, so that both see the same load on the machine. */
async function runInterleaved(runners: Runner[]): Promise<void> {
  const turns = Math.max(...runners.map((r) => r.turns));
  for (let turn = 1; turn <= turns; turn += 1) {
    for (const r of runners) if (turn <= r.turns) await runTurn(r, turn);
  }
}

function formatBytes(bytes: number): string {
  const units = ["B", "KB", "MB", "GB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(value >= 100 || Number.isInteger(value) ? 0 : 1)} ${units[unit]}`;
}

interface Analysis {
  stock: Run;
  product: Run;
  stockFit: number[];
  productFit: number[];
  productR2: number;
  stockQuadraticR2: number;
  turns: number;
  stockTurns: number;
}

function analyse(stock: Run, product: Run, turns: number, stockTurns: number): Analysis {
  const points = (run: Run) => run.samples.map((s) => ({ x: s.turn, y: s.bytes }));
  const productFit = fitPolynomial(points(product), 1);
  const stockFit = fitPolynomial(points(stock), 2);
  return {
    stock,
    product,
    stockFit,
    productFit,
    productR2: rSquared(points(product), productFit),
    stockQuadraticR2: rSquared(points(stock), stockFit),
    turns,
    stockTurns,
  };
}

function sampleAt(run: Run, turn: number): Sample | undefined {
  return run.samples.find((s) => s.turn === turn);
}

function tableRows(analysis: Analysis): string[][] {
  const rows: string[][] = [];
  for (const turn of REPORTED_TURNS.filter((t) => t <= analysis.turns)) {
    const product = sampleAt(analysis.product, turn);
    const stock = sampleAt(analysis.stock, turn);
    if (!product) continue;
    const stockBytes = stock?.bytes ?? evaluatePolynomial(analysis.stockFit, turn);
    rows.push([
      String(turn),
      stock ? formatBytes(stock.bytes) : `~${formatBytes(stockBytes)} (extrapolated)`,
      formatBytes(product.bytes),
      `${stock ? "" : "~"}${(stockBytes / product.bytes).toFixed(0)}×`,
      stock ? formatBytes(stock.largestDocument) : "—",
      formatBytes(product.largestDocument),
      stock ? stock.persistenceMs.toFixed(1) : "—",
      product.persistenceMs.toFixed(1),
    ]);
  }
  return rows;
}

const HEADER = [
  "turns",
  "stock bytes",
  "product bytes",
  "stock / product",
  "stock largest doc",
  "product largest doc",
  "stock persistence ms/turn",
  "product persistence ms/turn",
];

function printTable(rows: string[][]): void {
  const widths = HEADER.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padStart(widths[i])).join("  ");
  console.log(line(HEADER));
  for (const row of rows) console.log(line(row));
}

function markdown(analysis: Analysis, rows: string[][]): string {
  const { product, stock, productFit } = analysis;
  const perTurn = (run: Run, from: number, to: number) => {
    const a = sampleAt(run, from);
    const b = sampleAt(run, to);
    return a && b ? formatBytes((b.bytes - a.bytes) / (to - from)) : "—";
  };
  const lastProduct = product.samples[product.samples.length - 1];
  const lastStock = stock.samples[stock.samples.length - 1];
  return `# Storage benchmark (part benchmark: the checkpointer alone)

**A part benchmark.** It drives \`ThreadwiseSaver\` through a compiled graph with scripted messages,
not the product's turn path (HTTP API, model view, record, recall, events): its figures are the
checkpointer's share of a turn, not the product's. Product-path figures: \`npm run bench:long\`.

Generated by \`npm run bench:storage -- --write\` on ${new Date().toISOString().slice(0, 10)} against the embedded
MongoDB-compatible server. One thread; every turn is a user question, an agent tool call, a tool
output and an answer, driven through a compiled LangGraph \`StateGraph\` (\`MessagesAnnotation\`,
an agent node and a tool node with scripted messages, no LLM). Tool outputs cycle through
${TOOL_OUTPUT_KB.join(", ")} KB (${(TOOL_OUTPUT_KB.reduce((a, b) => a + b, 0) / TOOL_OUTPUT_KB.length).toFixed(0)} KB on average).

- **product**: \`ThreadwiseSaver\` (channel values stored once per version in \`checkpoint_blobs\`,
  only changed versions written, each version of the message list storing only the messages it
  appends), every turn claiming the thread with a new fence epoch and writing under it,
  \`prune()\` after every turn, which keeps every turn's first checkpoint (the state the turn
  started from, and its question) plus the latest ${DEFAULT_CHECKPOINTS_KEPT}, each tool output stored once in
  \`artifacts\` with a ${PREVIEW_CHARS}-character preview and the handle in the \`ToolMessage\`. Bytes count
  \`checkpoints\`, \`checkpoint_writes\`, \`checkpoint_blobs\`, \`checkpoint_threads\` and \`artifacts\`.
- **stock**: \`MongoDBSaver\` as documented: default durability (\`async\`), no pruning, outputs
  inline. Bytes count \`checkpoints\` and \`checkpoint_writes\`.

Bytes are the sum of \`BSON.calculateObjectSize\` over the thread's documents (the embedded server
has no collStats). Persistence time is the median, over the ${SAMPLE_EVERY} turns before the measurement,
of the time a turn spent in the checkpointer's \`put\`/\`putWrites\` (plus, for the product, the
artifact insert and \`prune\`). The two runs alternate turn by turn, so they share the machine's
load; single turns remain noisy.

| ${HEADER.join(" | ")} |
|${HEADER.map(() => "---:").join("|")}|
${rows.map((r) => `| ${r.join(" | ")} |`).join("\n")}

Stock was run for ${analysis.stockTurns} turns, not ${analysis.turns}: it rewrites the whole message list, tool outputs
included, into every checkpoint (one per step, several per turn), so its bytes grow quadratically (a quadratic fits its
samples with R² = ${analysis.stockQuadraticR2.toFixed(4)}) and ${analysis.turns} turns would write gigabytes into the
embedded server. Its figure at ${analysis.turns} turns is that fit, extrapolated, and marked as such.
At ${lastStock.turn} turns its largest document was already ${formatBytes(lastStock.largestDocument)}; the single latest
checkpoint grows by about ${formatBytes((TOOL_OUTPUT_KB.reduce((a, b) => a + b, 0) / TOOL_OUTPUT_KB.length) * 1024)} per turn toward MongoDB's 16 MB limit.

The product grows linearly: a straight line fits its ${product.samples.length} samples with R² = ${analysis.productR2.toFixed(4)},
at ${formatBytes(productFit[1])} per turn (about the average tool output, stored once, plus the checkpoint kept
per turn). Growth per turn was
${perTurn(product, 10, 50)} between turns 10 and 50 and ${perTurn(product, 50, Math.min(200, analysis.turns))}
between 50 and ${Math.min(200, analysis.turns)}. Its largest
document after ${lastProduct.turn} turns was ${formatBytes(lastProduct.largestDocument)} (${lastProduct.documents} documents in all); the size guard refuses any
document above ${formatBytes(DEFAULT_MAX_DOCUMENT_BYTES)}.

Each checkpoint of a product turn writes only the channels whose version changed; a new version
of the message list stores only the messages appended since its parent checkpoint's version and
names that version as its base, so the list is stored once however many turn-boundary checkpoints
reference it (prune merges what a turn appended into one document). The product's time per turn
grows with the thread: the thread keeps about ${(lastProduct.documents / lastProduct.turn).toFixed(0)} documents per turn (its first checkpoint, that
checkpoint's pending writes, the turn's messages, its artifact), and the embedded server scans a
collection's documents on every write (it does not use indexes for upserts); each put also
serializes and hashes the whole list to check that it extends its base, and loading the state
reads it whole. Absolute times are the embedded server's, on a shared machine.

![bytes stored per thread](storage.svg)
`;
}

/** Log-scale comparison on the left, the product alone on a linear scale on the right. */
function chart(analysis: Analysis): string {
  const maxTurn = analysis.turns;
  const stockColor = "#c0392b";
  const productColor = "#1f6fb2";
  const points = (samples: Sample[]) => samples.map((s) => ({ x: s.turn, y: s.bytes }));
  const frame = { top: 60, width: 380, height: 300 };
  const turnAxis: Axis = {
    min: 0,
    max: maxTurn,
    ticks: Array.from({ length: Math.floor(maxTurn / (maxTurn >= 100 ? 50 : 10)) + 1 }, (_, i) => i * (maxTurn >= 100 ? 50 : 10)).map((turn) => ({
      value: turn,
      label: String(turn),
    })),
    title: "turns",
  };

  // Left: both runs, log scale, gridlines at 100 KB, 1 MB, 10 MB, ...
  const all = [...analysis.stock.samples, ...analysis.product.samples].map((s) => s.bytes);
  const extrapolated = evaluatePolynomial(analysis.stockFit, maxTurn);
  const ticks = [100 * 1024, 1024 ** 2, 10 * 1024 ** 2, 100 * 1024 ** 2, 1024 ** 3, 10 * 1024 ** 3];
  const low = Math.min(...all, ...ticks.filter((t) => t <= Math.min(...all)).slice(-1));
  const high = Math.max(...all, extrapolated, ...ticks.filter((t) => t >= Math.max(...all, extrapolated)).slice(0, 1));
  const lastStockTurn = analysis.stock.samples[analysis.stock.samples.length - 1].turn;
  const fitted: Point[] = [];
  for (let turn = lastStockTurn; turn <= maxTurn; turn += 5) fitted.push({ x: turn, y: evaluatePolynomial(analysis.stockFit, turn) });
  const comparison: Panel = {
    ...frame,
    left: 70,
    title: "stock vs product (log scale)",
    x: turnAxis,
    y: {
      scale: "log",
      min: low,
      max: high,
      ticks: ticks.filter((t) => t >= low * 0.999 && t <= high * 1.001).map((t) => ({ value: t, label: formatBytes(t) })),
    },
    series: [
      { points: points(analysis.stock.samples), color: stockColor, markers: true },
      { points: points(analysis.product.samples), color: productColor, markers: true },
      ...(lastStockTurn < maxTurn ? [{ points: fitted, color: stockColor, dash: "6 4" }] : []),
    ],
  };

  // Right: the product alone, linear scale, with its linear fit.
  const productMax = Math.max(...analysis.product.samples.map((s) => s.bytes));
  const steps = [0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100].map((mb) => mb * 1024 ** 2);
  const step = steps.find((candidate) => productMax / candidate <= 8) ?? steps[steps.length - 1];
  const top = Math.ceil(productMax / step) * step;
  const fit = analysis.productFit;
  const product: Panel = {
    ...frame,
    left: 550,
    title: "product alone (linear scale)",
    x: turnAxis,
    y: { min: 0, max: top, ticks: Array.from({ length: Math.round(top / step) + 1 }, (_, i) => ({ value: i * step, label: formatBytes(i * step) })) },
    series: [
      {
        points: [
          { x: 0, y: evaluatePolynomial(fit, 0) },
          { x: maxTurn, y: evaluatePolynomial(fit, maxTurn) },
        ],
        color: "#999",
        dash: "3 3",
        width: 1,
      },
      { points: points(analysis.product.samples), color: productColor, markers: true },
    ],
    note: `linear fit: ${formatBytes(fit[1])} per turn, R² = ${analysis.productR2.toFixed(4)}`,
  };
  return lineChart({
    width: 960,
    height: 440,
    title: "Bytes stored in MongoDB for one thread",
    panels: [comparison, product],
    legend: {
      x: 70,
      y: 424,
      spacing: 300,
      entries: [
        { color: stockColor, label: "stock MongoDBSaver (measured)" },
        { color: stockColor, dash: "6 4", label: "stock, quadratic fit (extrapolated)" },
        { color: productColor, label: "product: ThreadwiseSaver + prune + artifacts" },
      ],
    },
  });
}

async function main(): Promise<void> {
  const options = {
    turns: { type: "string", default: "200" },
    "stock-turns": { type: "string", default: "50" },
    write: { type: "boolean", default: false },
  } as const;
  const { values } = parseCliArgs(optionsUsage("bench:storage", options), { options });
  const turns = Number(values.turns);
  const stockTurns = Math.min(Number(values["stock-turns"]), turns);
  if (!Number.isInteger(turns) || turns < SAMPLE_EVERY || !Number.isInteger(stockTurns) || stockTurns < SAMPLE_EVERY * 3) {
    throw new Error(`--turns must be an integer of at least ${SAMPLE_EVERY}, --stock-turns at least ${SAMPLE_EVERY * 3}`);
  }
  let embedded: EmbeddedMongo | undefined;
  const uri = process.env.MONGODB_URI ?? (embedded = await startEmbeddedMongo()).uri;
  const client = new MongoClient(uri);
  const run = randomUUID().slice(0, 8);
  const subjects = [stockSubject(client, `bench_storage_${run}_stock`), productSubject(client, `bench_storage_${run}_product`)];
  try {
    await client.connect();
    for (const subject of subjects) {
      const errors = await (subject.saver as MongoDBSaver).setup();
      if (errors.length > 0) throw new AggregateError(errors, `${subject.name} setup failed`);
    }
    const [stock, product] = [runner(subjects[0], stockTurns), runner(subjects[1], turns)];
    await runInterleaved([stock, product]);
    const analysis = analyse(stock.run, product.run, turns, stockTurns);
    const rows = tableRows(analysis);
    printTable(rows);
    // Tracked results change only when asked.
    if (values.write) {
      await writeResults({ "storage.md": markdown(analysis, rows), "storage.svg": chart(analysis) });
    }
  } finally {
    for (const subject of subjects) {
      await Promise.all(
        subject.collections.map((name) =>
          subject.db
            .collection(name)
            .drop()
            .catch(() => undefined),
        ),
      );
    }
    await client.close();
    await embedded?.stop();
  }
}

await main();
