/**
 * Storage cost of issue 46's reachability (a quick measure, about a minute): every tool output under
 * the offload threshold gets a stored copy (an `inline` artifact, `DEFAULT_HANDLE_EVERY_OUTPUT`), and
 * the recall index keeps each output whole in chunks (`recallToolOutputs`) instead of its first 400
 * characters. It writes the same turns twice, as the product writes them now and as it did before,
 * into the real stores on the embedded MongoDB server (`offloadToolOutput` into `artifacts`, one
 * record and one index entry a turn into `recall_turns` and `recall_index`, fenced), and reports the
 * BSON bytes of those collections per turn. The turns are bench:long's product part: a tool call in
 * 8 turns of 10, a sales report of 40–620 rows (1–20 KB), cycled; the indexer sees an offloaded
 * output as its notice (the turn's last view shows it so), an output under the threshold whole.
 *
 *   npx tsx bench/recall-storage-benchmark.ts [-- --turns 200] [-- --rows 40,60,90 (every output under the offload threshold)]
 */
import { BSON, MongoClient, type Db } from "mongodb";
import { apiPrincipal } from "../lib/auth/principal.js";
import { optionsUsage, parseCliArgs } from "../lib/local/cli-args.js";
import { startEmbeddedMongo } from "../lib/local/embedded-mongo.js";
import { toolOutputNotice } from "../lib/model-view/tool-output-notice.js";
import { countTextTokens } from "../lib/model-view/token-counter.js";
import { termFrequencies } from "../lib/recall/recall-terms.js";
import { DEFAULT_RECALL_ARGS_CHARS, DEFAULT_RECALL_PREVIEW_CHARS, recallEntryTerms, recallText, recallToolOutputs } from "../lib/recall/turn-indexer.js";
import { COLLECTIONS } from "../lib/store/collections.js";
import { ThreadwiseDatabase } from "../lib/store/database.js";
import type { RecallTurnDocument } from "../lib/store/recall-index-store.js";
import { DEFAULT_OFFLOAD_TOKENS, offloadToolOutput } from "../lib/tools/output-offload.js";
import { markdownTable } from "./support/markdown.js";

/** bench:long's report sizes, cycled (rows of about 32 bytes; 0: no tool call). */
const REPORT_ROWS = [40, 120, 0, 250, 620, 60, 180, 0, 400, 90];
let reportRows = REPORT_ROWS;
const OWNER = apiPrincipal("recall-storage");

function report(rows: number): string {
  return [
    "| row | customer | region | revenue | day |",
    ...Array.from({ length: rows }, (_, i) => `| ${i + 1} | customer-${i % 97} | region-${i % 7} | ${(i * 37) % 1000}.50 | 2026-11-30 |`),
  ].join("\n");
}

async function bytesOf(db: Db, collection: string, conversationId: string): Promise<number> {
  let bytes = 0;
  for await (const doc of db.collection(collection).find({ conversationId })) bytes += BSON.calculateObjectSize(doc);
  return bytes;
}

async function write(database: ThreadwiseDatabase, turns: number, now: boolean): Promise<string> {
  const conversationId = (await database.conversations.create(OWNER))._id;
  const fence = await database.lease.acquire(conversationId, `recall-storage-${now ? "now" : "before"}`);
  try {
    for (let turn = 1; turn <= turns; turn++) {
      const rows = reportRows[turn % reportRows.length];
      const tools: { name: string; args: string; content: string }[] = [];
      if (rows > 0) {
        const output = report(rows);
        const meta = { createdBy: OWNER, turnId: `${conversationId}-${turn}`, toolCallId: `c${turn}`, toolName: "sales_report", fence };
        const stored = await offloadToolOutput(output, meta, { artifacts: database.artifacts, handleEveryOutput: now });
        const offloaded = stored.artifact && !stored.artifact.inline ? stored.artifact : undefined;
        const shown = offloaded
          ? toolOutputNotice({
              toolName: "sales_report",
              tokens: countTextTokens(output),
              handle: offloaded.handle,
              preview: offloaded.preview,
              reason: "over-threshold",
              threshold: DEFAULT_OFFLOAD_TOKENS,
            })
          : output;
        tools.push({ name: "sales_report", args: JSON.stringify({ rows }), content: shown });
      }
      const record: RecallTurnDocument = {
        _id: `${conversationId}-${turn}`,
        conversationId,
        turnNumber: turn,
        at: new Date(Date.UTC(2026, 10, 30, 9) + turn * 60_000),
        status: "completed",
        question: rows === 0 ? `Turn ${turn}: anything new today?` : `Turn ${turn}: show me the sales report with ${rows} rows.`,
        answer: rows === 0 ? "Nothing new since the last report." : `Here is the sales report with ${rows} rows; revenue is in the fourth column.`,
        // Before issue 46: each output's first 400 characters, every term counted alike.
        tools: now
          ? recallToolOutputs(tools)
          : tools.map((t) => ({ name: t.name, args: t.args.slice(0, DEFAULT_RECALL_ARGS_CHARS), preview: t.content.slice(0, DEFAULT_RECALL_PREVIEW_CHARS) })),
      };
      const terms = now ? recallEntryTerms(record).terms : termFrequencies(recallText(record));
      let length = 0;
      for (const count of terms.values()) length += count;
      await database.recall.add(record, { length, terms }, fence);
    }
  } finally {
    await database.lease.release(fence);
  }
  return conversationId;
}

async function main() {
  const options = { turns: { type: "string", default: "200" }, rows: { type: "string", default: REPORT_ROWS.join(",") } } as const;
  const { values } = parseCliArgs(optionsUsage("recall-storage-benchmark", options), { options });
  const turns = Number(values.turns);
  reportRows = values.rows.split(",").map(Number);
  const mongo = await startEmbeddedMongo();
  const client = new MongoClient(mongo.uri);
  await client.connect();
  try {
    const database = new ThreadwiseDatabase(client, { dbName: `bench_recall_storage_${Date.now()}` });
    await database.setup();
    const { db } = database;
    const collections = [COLLECTIONS.artifacts, COLLECTIONS.recallTurns, COLLECTIONS.recallIndex];
    const rows: string[][] = [];
    const totals: number[] = [];
    for (const now of [false, true]) {
      const conversationId = await write(database, turns, now);
      const bytes = await Promise.all(collections.map((c) => bytesOf(db, c, conversationId)));
      const total = bytes.reduce((a, b) => a + b, 0);
      totals.push(total);
      const perTurn = (b: number) => `${(b / turns / 1024).toFixed(1)} KB`;
      rows.push([now ? "now (issue 46)" : "before (preview only, no inline copies)", ...bytes.map(perTurn), perTurn(total)]);
    }
    console.log(
      `${turns} turns, reports of ${reportRows.join(", ")} rows, cycled (0: no tool call). Bytes per turn (BSON):\n\n` +
        markdownTable(["", ...collections, "together"], rows, ["left", ...collections.map(() => "right" as const), "right"]) +
        `\n\nadded per turn: ${((totals[1] - totals[0]) / turns / 1024).toFixed(1)} KB`,
    );
  } finally {
    await client.close();
    await mongo.stop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
