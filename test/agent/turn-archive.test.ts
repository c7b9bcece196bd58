import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import type { ThreadMessage } from "../../lib/agent/turn-runner.js";
import type { App } from "../../lib/app.js";
import { apiPrincipal, type Caller } from "../../lib/auth/index.js";
import { useTestApp } from "../support/app-fixture.js";
import { crashOnceAt, SimulatedCrash } from "../support/crash.js";
import { bigReport } from "../support/test-tools.js";

const alice: Caller = { principal: apiPrincipal("alice"), roles: [] };
// At most 2 finished turns in the view, 2 + 0 + 6 before a block is archived.
const testApp = useTestApp("turn_archive", {
  clearBeforeEach: false,
  env: { VIEW_FINISHED_TURNS: "2", VIEW_HISTORY_BLOCK_TURNS: "1" },
  app: { tools: [bigReport] },
});
const { client, dbName } = testApp.database;
/** Archives finished turns out of the working set (the product). */
let app: App;
/** Keeps every message in the thread, as threads were written before the working set. */
let legacy: App;

beforeAll(async () => {
  app = await testApp.appWith();
  legacy = await testApp.appWith({ setup: "ensure", archiveTurns: false });
});

const question = (t: number) =>
  t === 1 ? "My favourite colour is teal." : t % 2 === 0 ? `Turn ${t}: run big_report {"rows": ${20 + t}} please.` : `Turn ${t}: how are you?`;

async function converse(runner: App, conversationId: string, from: number, to: number): Promise<string[]> {
  const turnIds: string[] = [];
  for (let t = from; t <= to; t++) {
    const turnId = randomUUID();
    expect((await runner.runner.run({ conversationId, caller: alice, content: question(t), turnId })).status).toBe("completed");
    turnIds.push(turnId);
  }
  return turnIds;
}

/** Every message of the thread, archived ones first, as the API shows them. */
async function wholeThread(conversationId: string): Promise<ThreadMessage[]> {
  const { messages, archivedTurns } = await app.runner.readWorkingSet(conversationId);
  const archived = await app.runner.readArchive(conversationId, 1, archivedTurns);
  expect(archived.map((t) => t.turnNumber)).toEqual(Array.from({ length: archivedTurns }, (_, i) => i + 1));
  return [...archived.flatMap((t) => t.messages), ...messages];
}

describe("the thread's working set", () => {
  it("keeps only the turns the view can use, and every earlier turn in the archive", async () => {
    const { _id: conversationId } = await app.database.conversations.create(alice.principal);
    await converse(app, conversationId, 1, 20);
    const { messages, archivedTurns } = await app.runner.readWorkingSet(conversationId);
    expect(archivedTurns).toBeGreaterThanOrEqual(12);
    expect(messages.filter((m) => m.role === "user").length).toBe(20 - archivedTurns);
    const all = await wholeThread(conversationId);
    expect(all.filter((m) => m.role === "user").map((m) => m.content)).toEqual(Array.from({ length: 20 }, (_, i) => question(i + 1)));
    // The archive is written once per turn, never rewritten: one document each (these are small).
    expect(await client.db(dbName).collection("turn_archive").countDocuments({ conversationId })).toBe(archivedTurns);
  });

  it("counts archived turns in the out-of-sight notice and still finds them with search_conversation", async () => {
    const { _id: conversationId } = await app.database.conversations.create(alice.principal);
    await converse(app, conversationId, 1, 16);
    expect((await app.runner.readWorkingSet(conversationId)).archivedTurns).toBeGreaterThan(0);
    const { turnId, answer } = await app.runner.run({ conversationId, caller: alice, content: "What is my favourite colour?", turnId: randomUUID() });
    expect(answer).toBe("Your favourite colour is teal.");
    const call = (await app.database.turns.getWithCalls(turnId))?.calls[0];
    expect(call?.toolCalls).toEqual(["search_conversation"]);
    expect(call?.view[0].content).toMatch(/The first \d+ turns of this conversation are not shown to you/);
  });

  it("regenerates the latest turn when that turn archived the ones before it", async () => {
    const { _id: conversationId } = await app.database.conversations.create(alice.principal);
    const turnIds = await converse(app, conversationId, 1, 9);
    // Turn 9 found 8 finished turns, 6 of them before the window: it archived them first.
    const archived = (await app.runner.readWorkingSet(conversationId)).archivedTurns;
    expect(archived).toBe(6);
    const before = await wholeThread(conversationId);
    const replaced = turnIds[8];
    const result = await app.runner.run({ conversationId, caller: alice, content: "Turn 9, asked again.", turnId: randomUUID(), replaces: replaced });
    expect(result.status).toBe("completed");
    const after = await wholeThread(conversationId);
    const at = before.findIndex((m) => m.id === `${replaced}:user`);
    expect(after.slice(0, at)).toEqual(before.slice(0, at));
    expect(after.filter((m) => m.role === "user").map((m) => m.content)).toEqual([
      ...Array.from({ length: 8 }, (_, i) => question(i + 1)),
      "Turn 9, asked again.",
    ]);
    expect((await app.runner.readWorkingSet(conversationId)).archivedTurns).toBe(6);
  });

  it("resumes a turn that died between archiving and removing the turns, archiving each once and losing none", async () => {
    const faults = crashOnceAt("after-archive");
    const crashing = await testApp.appWith({ setup: "ensure", faults });
    const { _id: conversationId } = await crashing.database.conversations.create(alice.principal);
    await converse(crashing, conversationId, 1, 8);
    const request = { conversationId, caller: alice, content: question(9), turnId: randomUUID() };
    await expect(crashing.runner.run(request)).rejects.toThrow(SimulatedCrash);
    // The archive holds the turns; the thread still does too, as if the step had not run.
    expect(await client.db(dbName).collection("turn_archive").countDocuments({ conversationId })).toBe(6);
    expect((await crashing.runner.readWorkingSet(conversationId)).archivedTurns).toBe(0);
    expect((await crashing.runner.run(request)).status).toBe("completed");
    expect(await client.db(dbName).collection("turn_archive").countDocuments({ conversationId })).toBe(6);
    expect((await crashing.runner.readWorkingSet(conversationId)).archivedTurns).toBe(6);
    const all = await wholeThread(conversationId);
    expect(all.filter((m) => m.role === "user").map((m) => m.content)).toEqual(Array.from({ length: 9 }, (_, i) => question(i + 1)));
    expect(new Set(all.map((m) => m.id)).size).toBe(all.length);
  });

  it("compacts a thread written with every message on its next turn, losing nothing", async () => {
    const { _id: conversationId } = await legacy.database.conversations.create(alice.principal);
    await converse(legacy, conversationId, 1, 18);
    const written = await legacy.runner.readWorkingSet(conversationId);
    expect(written.archivedTurns).toBe(0);
    expect(written.messages.filter((m) => m.role === "user").length).toBe(18);
    await converse(app, conversationId, 19, 19);
    const { messages, archivedTurns } = await app.runner.readWorkingSet(conversationId);
    expect(archivedTurns).toBe(16);
    expect(messages.filter((m) => m.role === "user").length).toBe(3);
    const all = await wholeThread(conversationId);
    expect(all.slice(0, written.messages.length)).toEqual(written.messages);
    expect(all.filter((m) => m.role === "user").map((m) => m.content)).toEqual(Array.from({ length: 19 }, (_, i) => question(i + 1)));
  });
});
