import { randomUUID } from "node:crypto";
import { BSON, type CommandStartedEvent, type CommandSucceededEvent, type Db } from "mongodb";
import { beforeAll, describe, expect, it } from "vitest";
import type { App } from "../../lib/app.js";
import { apiPrincipal, type Caller } from "../../lib/auth/index.js";
import { COLLECTIONS } from "../../lib/store/collections.js";
import { useTestApp } from "../support/app-fixture.js";
import { bigReport } from "../support/test-tools.js";

/**
 * The "Done when" of issue 28: a conversation of TURNS turns through `createApp` (the embedded
 * server, the offline model, a tool call in most turns with outputs of 1–20 KB, the largest
 * offloaded), and every per-turn cost of its last WINDOW turns against its first WINDOW:
 * bytes written and stored, the largest document, database round trips and CPU.
 */
const TURNS = Number(process.env.LONG_CONVERSATION_TURNS ?? 150);
const WINDOW = Math.min(50, Math.floor(TURNS / 3));
/**
 * Rows of the tool's report per turn of the compared windows, cycled (about 30 bytes a row: 1 KB to
 * 20 KB; the largest, over the 2,000-token threshold, is offloaded); 0: no tool call. The turns
 * between the windows, which only lengthen the conversation, ask without a tool call: the cheapest
 * turn the product has (about 100 round trips against 130–175), so the test takes half the time.
 */
const REPORT_ROWS = [30, 0, 120, 0, 650, 0, 45, 0, 0, 0];
/** How much more the last turns may cost than the first before the test calls it growth (deterministic counts). */
const MAX_COUNT_GROWTH = 1.25;
/** CPU time is noisy on a loaded machine: a generous factor, far below what growth with history gives over 150 turns. */
const MAX_CPU_GROWTH = 2;
/** Every document the conversation owns stays below this size. */
const MAX_DOCUMENT_BYTES = 256 * 1024;

const alice: Caller = { principal: apiPrincipal("alice"), roles: [] };
// A short window (at most 5 finished turns in the view, 11 in the thread), so the conversation reaches its steady state early and turns stay cheap.
const testApp = useTestApp("long_conversation", {
  clearBeforeEach: false,
  clientOptions: { monitorCommands: true },
  env: { VIEW_FINISHED_TURNS: "3", VIEW_HISTORY_BLOCK_TURNS: "3" },
});
const { client, dbName } = testApp.database;
const WRITES = new Set(["insert", "update", "findAndModify", "delete"]);

interface TurnCost {
  roundTrips: number;
  writtenBytes: number;
  /** Documents the replies returned, and their bytes: a query that reads more of the history each turn grows them. */
  returnedDocs: number;
  replyBytes: number;
  cpuMicros: number;
}

let app: App;
let meter = { roundTrips: 0, writtenBytes: 0, returnedDocs: 0, replyBytes: 0 };
const ours = new Set<number>();
const trace = new Map<string, number>();
const byTurn: Map<string, number>[] = [];

beforeAll(async () => {
  client.on("commandStarted", (event: CommandStartedEvent) => {
    if (event.databaseName !== dbName) return;
    ours.add(event.requestId);
    meter.roundTrips++;
    const collection = String(event.command[event.commandName] ?? "");
    if (process.env.LONG_CONVERSATION_TRACE) trace.set(`${event.commandName}:${collection}`, (trace.get(`${event.commandName}:${collection}`) ?? 0) + 1);
    if (!WRITES.has(event.commandName)) return;
    const size = BSON.calculateObjectSize(event.command);
    meter.writtenBytes += size;
    if (process.env.LONG_CONVERSATION_TRACE) trace.set(`bytes:${collection}`, (trace.get(`bytes:${collection}`) ?? 0) + size);
  });
  client.on("commandSucceeded", (event: CommandSucceededEvent) => {
    if (!ours.delete(event.requestId)) return;
    const reply = event.reply as { cursor?: { firstBatch?: unknown[]; nextBatch?: unknown[] }; value?: unknown };
    meter.returnedDocs += reply.cursor?.firstBatch?.length ?? reply.cursor?.nextBatch?.length ?? (reply.value ? 1 : 0);
    meter.replyBytes += BSON.calculateObjectSize(event.reply as object);
  });
  app = await testApp.appWith({ tools: [bigReport] });
  await app.ready();
});

/** Every document of the database: their BSON bytes and the largest. */
async function storage(db: Db): Promise<{ bytes: number; largest: number; largestIn: string }> {
  let bytes = 0;
  let largest = 0;
  let largestIn = "";
  for (const name of Object.values(COLLECTIONS)) {
    for await (const doc of db.collection(name).find({})) {
      const size = BSON.calculateObjectSize(doc);
      bytes += size;
      if (size > largest) [largest, largestIn] = [size, name];
    }
  }
  return { bytes, largest, largestIn };
}

function mean(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0) / Math.max(values.length, 1);
}

/** The least mean of `values` over runs of `run` (CPU time: a turn the machine slowed down does not count). */
function leastMean(values: readonly number[], run = 10): number {
  let least = Infinity;
  for (let i = 0; i + run <= values.length; i += run) least = Math.min(least, mean(values.slice(i, i + run)));
  return least;
}

function question(turn: number): string {
  const between = turn > WINDOW && turn <= TURNS - WINDOW;
  const rows = between ? 0 : REPORT_ROWS[turn % REPORT_ROWS.length];
  return rows === 0 ? `Turn ${turn}: how are things going?` : `Turn ${turn}: please run big_report {"rows": ${rows}} and summarise it.`;
}

describe("a long conversation through createApp", () => {
  it(`costs the same per turn at turn ${TURNS} as at turn ${WINDOW}: bytes, largest document, round trips and CPU`, async () => {
    const { _id: conversationId } = await app.database.conversations.create(alice.principal);
    const db = client.db(dbName);
    const costs: TurnCost[] = [];
    const stored: { turn: number; bytes: number; largest: number; largestIn: string }[] = [];
    for (let turn = 1; turn <= TURNS; turn++) {
      meter = { roundTrips: 0, writtenBytes: 0, returnedDocs: 0, replyBytes: 0 };
      const cpu = process.cpuUsage();
      const result = await app.runner.run({ conversationId, caller: alice, content: question(turn), turnId: randomUUID() });
      const used = process.cpuUsage(cpu);
      expect(result.status).toBe("completed");
      costs.push({ ...meter, cpuMicros: used.user + used.system });
      if (turn === WINDOW || turn === TURNS - WINDOW || turn === TURNS) stored.push({ turn, ...(await storage(db)) });
      if (process.env.LONG_CONVERSATION_TRACE) {
        const c = costs[costs.length - 1];
        const parts = [...trace].map(([k, v]) => `${k}=${v}`).join(" ");
        process.stderr.write(`turn ${turn} roundTrips ${c.roundTrips} written ${c.writtenBytes} cpu ${Math.round(c.cpuMicros / 1000)}ms ${parts}\n`);
        byTurn.push(new Map(trace));
        trace.clear();
      }
    }
    const first = costs.slice(0, WINDOW);
    const last = costs.slice(-WINDOW);
    const [atFirst, beforeLast, atEnd] = stored;
    const report = {
      roundTrips: [mean(first.map((c) => c.roundTrips)), mean(last.map((c) => c.roundTrips))],
      writtenBytes: [mean(first.map((c) => c.writtenBytes)), mean(last.map((c) => c.writtenBytes))],
      returnedDocs: [mean(first.map((c) => c.returnedDocs)), mean(last.map((c) => c.returnedDocs))],
      replyBytes: [mean(first.map((c) => c.replyBytes)), mean(last.map((c) => c.replyBytes))],
      storedBytesPerTurn: [atFirst.bytes / WINDOW, (atEnd.bytes - beforeLast.bytes) / WINDOW],
      largestDocument: [atFirst.largest, atEnd.largest, atEnd.largestIn],
      cpuMicros: [leastMean(first.map((c) => c.cpuMicros)), leastMean(last.map((c) => c.cpuMicros))],
    };
    if (process.env.LONG_CONVERSATION_TRACE) {
      const sum = (maps: Map<string, number>[]) => {
        const total = new Map<string, number>();
        for (const m of maps) for (const [k, v] of m) total.set(k, (total.get(k) ?? 0) + v / maps.length);
        return total;
      };
      const a = sum(byTurn.slice(0, WINDOW));
      const b = sum(byTurn.slice(-WINDOW));
      for (const k of new Set([...a.keys(), ...b.keys()])) process.stderr.write(`window ${k} ${Math.round(a.get(k) ?? 0)} -> ${Math.round(b.get(k) ?? 0)}\n`);
    }
    const message = JSON.stringify(report);
    expect(report.roundTrips[1], message).toBeLessThanOrEqual(report.roundTrips[0] * MAX_COUNT_GROWTH);
    expect(report.writtenBytes[1], message).toBeLessThanOrEqual(report.writtenBytes[0] * MAX_COUNT_GROWTH);
    expect(report.returnedDocs[1], message).toBeLessThanOrEqual(report.returnedDocs[0] * MAX_COUNT_GROWTH);
    expect(report.replyBytes[1], message).toBeLessThanOrEqual(report.replyBytes[0] * MAX_COUNT_GROWTH);
    expect(report.storedBytesPerTurn[1], message).toBeLessThanOrEqual(report.storedBytesPerTurn[0] * MAX_COUNT_GROWTH);
    expect(atEnd.largest, message).toBeLessThanOrEqual(Math.max(atFirst.largest * MAX_COUNT_GROWTH, 64 * 1024));
    expect(atEnd.largest, message).toBeLessThan(MAX_DOCUMENT_BYTES);
    expect(report.cpuMicros[1], message).toBeLessThanOrEqual(report.cpuMicros[0] * MAX_CPU_GROWTH);
  }, 600_000);
});
