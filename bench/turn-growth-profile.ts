/**
 * Where a turn's cost grows with the conversation: drives one conversation through `createApp`
 * (the embedded server, the offline model, the `big_report` tool in one turn of five) and, at the
 * marked turns, lists every database command of the turn with its duration and the documents its
 * reply returned (the driver's command monitoring), grouped by command and collection.
 *
 *   npx tsx bench/turn-growth-profile.ts [--turns 650] [--marks 50,600]
 */
import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import { BSON, MongoClient, type CommandStartedEvent, type CommandSucceededEvent } from "mongodb";
import { createApp } from "../lib/app.js";
import { apiPrincipal, type Caller } from "../lib/auth/index.js";
import { loadConfig } from "../lib/config/config.js";
import { startEmbeddedMongo } from "../lib/local/embedded-mongo.js";
import { COLLECTIONS } from "../lib/store/collections.js";
import { bigReport } from "../test/support/test-tools.js";

const { values } = parseArgs({ options: { turns: { type: "string", default: "650" }, marks: { type: "string", default: "50,600" } } });
const turns = Number(values.turns);
const marks = new Set(values.marks.split(",").map(Number));
const embedded = process.env.MONGODB_URI ? undefined : await startEmbeddedMongo();
const uri = process.env.MONGODB_URI ?? embedded?.uri ?? "";
const dbName = `turn_profile_${randomUUID().slice(0, 8)}`;
const client = new MongoClient(uri, { monitorCommands: true });

interface Row {
  count: number;
  ms: number;
  docs: number;
  replyBytes: number;
}
let rows = new Map<string, Row>();
const pending = new Map<number, { key: string; started: number }>();
client.on("commandStarted", (e: CommandStartedEvent) => {
  if (e.databaseName !== dbName) return;
  const coll = String(e.command[e.commandName] ?? "");
  const filter = e.command.filter ?? e.command.query ?? e.command.pipeline?.[0]?.$match ?? e.command.updates?.[0]?.q ?? e.command.deletes?.[0]?.q ?? {};
  const shape =
    JSON.stringify(Object.keys(filter)) +
    (e.command.sort ? ` sort=${JSON.stringify(Object.keys(e.command.sort))}` : "") +
    (e.command.limit ? ` limit=${e.command.limit}` : "");
  pending.set(e.requestId, { key: `${e.commandName} ${coll} ${shape}`, started: performance.now() });
});
client.on("commandSucceeded", (e: CommandSucceededEvent) => {
  const p = pending.get(e.requestId);
  if (!p) return;
  pending.delete(e.requestId);
  const reply = e.reply as { cursor?: { firstBatch?: unknown[]; nextBatch?: unknown[] }; value?: unknown; n?: number };
  const docs = reply.cursor?.firstBatch?.length ?? reply.cursor?.nextBatch?.length ?? (reply.value ? 1 : 0);
  const row = rows.get(p.key) ?? { count: 0, ms: 0, docs: 0, replyBytes: 0 };
  row.count++;
  row.ms += performance.now() - p.started;
  row.docs += docs;
  row.replyBytes += BSON.calculateObjectSize(e.reply as object);
  rows.set(p.key, row);
});
await client.connect();
const config = loadConfig({ MONGODB_URI: uri, MONGODB_DB: dbName });
const app = await createApp(config, { mongoClient: client, tools: [bigReport] });
await app.ready();
const alice: Caller = { principal: apiPrincipal("alice"), roles: [] };
const { _id: conversationId } = await app.database.conversations.create(alice.principal);
const report: Record<number, Map<string, Row>> = {};
for (let turn = 1; turn <= turns; turn++) {
  rows = new Map();
  const content =
    turn % 5 === 0 ? `Turn ${turn}: please run big_report {"rows": ${30 + (turn % 7) * 90}} and summarise it.` : `Turn ${turn}: how are things going?`;
  const cpu = process.cpuUsage();
  const wall = performance.now();
  const result = await app.runner.run({ conversationId, caller: alice, content, turnId: randomUUID() });
  const used = process.cpuUsage(cpu);
  if (result.status !== "completed") throw new Error(`turn ${turn}: ${result.status}`);
  const total = [...rows.values()].reduce((a, r) => ({ count: a.count + r.count, ms: a.ms + r.ms, docs: a.docs + r.docs }), { count: 0, ms: 0, docs: 0 });
  if (turn % 50 === 0 || marks.has(turn))
    process.stderr.write(
      `turn ${turn}: wall ${(performance.now() - wall).toFixed(0)} ms cpu ${((used.user + used.system) / 1000).toFixed(0)} ms, ` +
        `${total.count} round trips (${total.ms.toFixed(0)} ms), ${total.docs} docs returned\n`,
    );
  if (marks.has(turn)) report[turn] = rows;
}
const sorted = [...marks].sort((x, y) => x - y);
const half = Math.floor(sorted.length / 2);
// The first half of the marks against the second (`--marks 50,51,600,601`: turn 50 against 600, 51 against 601).
for (let i = 0; i < half; i++) {
  const [a, b] = [report[sorted[i]] ?? new Map<string, Row>(), report[sorted[i + half]] ?? new Map<string, Row>()];
  process.stdout.write(`== turn ${sorted[i]} -> turn ${sorted[i + half]}\n`);
  const lines = [...new Set([...a.keys(), ...b.keys()])].map((k) => ({ k, x: a.get(k), y: b.get(k) }));
  lines.sort((p, q) => (q.y?.ms ?? 0) - (p.y?.ms ?? 0));
  for (const { k, x, y } of lines)
    process.stdout.write(
      `${k}\n   count ${x?.count ?? 0} -> ${y?.count ?? 0}; ms ${(x?.ms ?? 0).toFixed(1)} -> ${(y?.ms ?? 0).toFixed(1)}; ` +
        `docs ${x?.docs ?? 0} -> ${y?.docs ?? 0}; reply ${x?.replyBytes ?? 0} -> ${y?.replyBytes ?? 0}\n`,
    );
}
// How many documents each collection holds at the end: the embedded server's writes cost grows with it (docs/storage.md).
const counts: string[] = [];
for (const name of Object.values(COLLECTIONS)) {
  const n = await client.db(dbName).collection(name).countDocuments({});
  if (n > 0) counts.push(`${name} ${n}`);
}
process.stdout.write(`== documents after turn ${turns}: ${counts.join(", ")}\n`);
await app.close();
await client.close();
await embedded?.stop();
