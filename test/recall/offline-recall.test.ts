import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import type { App } from "../../lib/app.js";
import { apiPrincipal, type Caller } from "../../lib/auth/index.js";
import { useTestApp } from "../support/app-fixture.js";

const alice: Caller = { principal: apiPrincipal("alice"), roles: [] };
const bob: Caller = { principal: apiPrincipal("bob"), roles: [] };
// A window moving one turn at a time, so a turn leaves the view as soon as three newer ones are finished.
const testApp = useTestApp("recall_offline", { clearBeforeEach: false, env: { VIEW_FINISHED_TURNS: "3", VIEW_HISTORY_BLOCK_TURNS: "1" } });
let app: App;

beforeAll(async () => {
  app = await testApp.appWith({ tools: [] });
});

async function converse(conversationId: string, contents: string[], caller = alice): Promise<string[]> {
  const answers: string[] = [];
  for (const content of contents) answers.push((await app.runner.run({ conversationId, caller, content, turnId: randomUUID() })).answer);
  return answers;
}

const FILLER = ["How are the shipments doing?", "Any news on the warehouse move?", "Who approves travel?", "Let us talk about lunch options."];

describe("the offline model with search_conversation", () => {
  it("answers 'what is my X?' from a turn out of sight by searching for it", async () => {
    const { _id: conversationId } = await app.database.conversations.create(alice.principal);
    await converse(conversationId, ["My name is Ada.", ...FILLER]);
    const { turnId, answer } = await app.runner.run({ conversationId, caller: alice, content: "What is my name?", turnId: randomUUID() });
    expect(answer).toBe("Your name is Ada.");
    const turn = await app.database.turns.getWithCalls(turnId);
    expect(turn?.calls.map((c) => c.toolCalls)).toEqual([["search_conversation"], []]);
    expect(turn?.calls[0].view[0].content).toMatch(/The first (turn of this conversation is|\d+ turns of this conversation are) not shown to you/);
    const result = turn?.calls[1].view.find((m) => m.role === "tool");
    expect(result?.content).toMatch(/^\[Turn 1, \d{4}-\d\d-\d\d \d\d:\d\d UTC\]$/m);
  });

  it("searches when the question points back at something said before, and quotes what it found", async () => {
    const { _id: conversationId } = await app.database.conversations.create(alice.principal);
    await converse(conversationId, ["For the quarterly review we agreed to use the EMEA revenue numbers.", ...FILLER]);
    const answer = (await converse(conversationId, ["What did we decide about the quarterly review?"]))[0];
    expect(answer).toContain("search_conversation returned");
    expect(answer).toContain("EMEA revenue numbers");
  });

  it("finds only what was said in the caller's own conversation, never another user's or conversation's", async () => {
    const { _id: alices } = await app.database.conversations.create(alice.principal);
    const { _id: alicesOther } = await app.database.conversations.create(alice.principal);
    const { _id: bobs } = await app.database.conversations.create(bob.principal);
    await converse(bobs, ["My name is Bob.", ...FILLER], bob);
    await converse(alicesOther, ["My name is Grace.", ...FILLER]);
    await converse(alices, ["My name is Ada.", ...FILLER]);
    expect(await converse(bobs, ["What is my name?"], bob)).toEqual(["Your name is Bob."]);
    expect(await converse(alices, ["What is my name?"])).toEqual(["Your name is Ada."]);
    const { turnId } = await app.runner.run({ conversationId: alices, caller: alice, content: "What did I say about my name?", turnId: randomUUID() });
    const found = (await app.database.turns.getWithCalls(turnId))?.calls[1].view.find((m) => m.role === "tool")?.content;
    expect(found).toContain("My name is Ada.");
    expect(found).not.toMatch(/Bob|Grace/);
  });

  it("answers from the conversation it sees, without searching, while no turn is out of sight", async () => {
    const { _id: conversationId } = await app.database.conversations.create(alice.principal);
    await converse(conversationId, ["Hello there."]);
    const { turnId, answer } = await app.runner.run({ conversationId, caller: alice, content: "What did I say before?", turnId: randomUUID() });
    expect(answer).toContain('the last was: "Hello there."');
    const turn = await app.database.turns.getWithCalls(turnId);
    expect(turn?.calls.map((c) => c.toolCalls)).toEqual([[]]);
  });
});
