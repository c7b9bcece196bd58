import type { BaseMessage } from "@langchain/core/messages";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestServer } from "../support/api-client.js";
import { lastUserText } from "../support/converse-endpoint.js";
import { startServerWithModel, type ModelServer } from "../support/model-server.js";
import { ConversationSearch } from "../../lib/recall/conversation-search.js";

let server: ModelServer;
let api: TestServer;
let token: string;

beforeAll(async () => {
  // The request number tells a regenerated answer from the first one.
  server = await startServerWithModel((request, { requestNumber }) => ({ text: `answer #${requestNumber} to: ${lastUserText(request)}` }));
  api = server.api;
  token = await api.token("alice");
});

afterAll(() => server?.close());

async function conversationWith(...questions: string[]): Promise<{ id: string; turnIds: string[] }> {
  const id = (await api.call("POST", "/v1/conversations", { token })).body.conversationId as string;
  const turnIds: string[] = [];
  for (const content of questions) turnIds.push((await api.call("POST", `/v1/conversations/${id}/messages`, { token, json: { content } })).body.turnId);
  return { id, turnIds };
}

const contents = (messages: BaseMessage[]) => messages.map((m) => String(m.content).replace(/^answer #\d+ to: /, "answer to: "));

async function latestState(id: string): Promise<BaseMessage[]> {
  const tuple = await api.server.app.database.checkpointer.getTuple({ configurable: { thread_id: id } });
  return tuple?.checkpoint.channel_values.messages as BaseMessage[];
}

describe("recall after a replacement (issue 31)", () => {
  const search = () => new ConversationSearch({ index: api.server.app.database.recall });
  const found = async (id: string, query: string) =>
    (await search().search({ conversationId: id, query, limit: 10, visibleTurns: 0 })).hits.map((h) => h.record.question);

  it("forgets an edited question: search finds only what the thread holds", async () => {
    const { id, turnIds } = await conversationWith("My pin is 4711.");
    expect(await found(id, "pin")).toEqual(["My pin is 4711."]);
    const edited = await api.call("POST", `/v1/conversations/${id}/turns/${turnIds[0]}/edit`, { token, json: { content: "My pin is 0000." } });
    expect(edited.status).toBe(200);
    expect(await found(id, "pin")).toEqual(["My pin is 0000."]);
    expect(await found(id, "4711")).toEqual([]);
    const entries = await api.server.app.database.recall.entries(id);
    expect(entries.map((e) => e.turnId)).toEqual([edited.body.turnId]);
    expect(await api.server.app.database.recall.records(id, [turnIds[0]])).toEqual([]);
  });

  it("forgets a regenerated turn's first answer, and keeps numbering after it", async () => {
    const { id, turnIds } = await conversationWith("first question", "what is the code word");
    const again = await api.call("POST", `/v1/conversations/${id}/turns/${turnIds[1]}/regenerate`, { token });
    expect(again.status).toBe(200);
    const entries = await api.server.app.database.recall.entries(id);
    expect(entries.map((e) => e.turnId)).toEqual([turnIds[0], again.body.turnId]);
    expect(entries.map((e) => e.turnNumber)).toEqual([1, 3]);
  });
});

describe("POST /v1/conversations/{id}/turns/{turnId}/edit", () => {
  it("answers the edited question from the turn boundary before it, and the record marks what it replaced", async () => {
    const { id, turnIds } = await conversationWith("first question", "second question");
    const before = await api.server.app.database.checkpointer.getTuple({ configurable: { thread_id: id } });

    const edited = await api.call("POST", `/v1/conversations/${id}/turns/${turnIds[1]}/edit`, { token, json: { content: "second question, edited" } });

    expect(edited.status).toBe(200);
    expect(edited.body.answer).toMatch(/^answer #\d+ to: second question, edited$/);
    expect(contents(await latestState(id))).toEqual([
      "first question",
      "answer to: first question",
      "second question, edited",
      "answer to: second question, edited",
    ]);
    const record = (await api.call("GET", `/v1/conversations/${id}/messages`, { token })).body.messages;
    expect(record.map((m: { content: string; replacedBy?: string }) => [m.content.replace(/^answer #\d+ to: /, "answer to: "), m.replacedBy ?? null])).toEqual([
      ["first question", null],
      ["answer to: first question", null],
      ["second question", edited.body.turnId],
      ["answer to: second question", edited.body.turnId],
      ["second question, edited", null],
      ["answer to: second question, edited", null],
    ]);
    const replaced = await api.call("GET", `/v1/conversations/${id}/turns/${turnIds[1]}`, { token });
    expect(replaced.body).toMatchObject({ status: "completed", replacedBy: edited.body.turnId });
    expect((await api.call("GET", `/v1/conversations/${id}/turns/${edited.body.turnId}`, { token })).body).toMatchObject({ replaces: turnIds[1] });
    // The original branch is untouched: its last checkpoint still reads as it did.
    const checkpointId = before?.config.configurable?.checkpoint_id;
    const original = await api.server.app.database.checkpointer.getTuple({ configurable: { thread_id: id, checkpoint_id: checkpointId } });
    expect(contents(original?.checkpoint.channel_values.messages as BaseMessage[])).toEqual([
      "first question",
      "answer to: first question",
      "second question",
      "answer to: second question",
    ]);
  });

  it("replaces a conversation's only turn, forking from the thread's first checkpoint", async () => {
    const { id, turnIds } = await conversationWith("only question");
    const before = await api.server.app.database.checkpointer.getTuple({ configurable: { thread_id: id } });
    const edited = await api.call("POST", `/v1/conversations/${id}/turns/${turnIds[0]}/edit`, { token, json: { content: "only question, edited" } });
    expect(edited.status).toBe(200);
    expect(contents(await latestState(id))).toEqual(["only question, edited", "answer to: only question, edited"]);
    const original = await api.server.app.database.checkpointer.getTuple(before!.config);
    expect(contents(original?.checkpoint.channel_values.messages as BaseMessage[])).toEqual(["only question", "answer to: only question"]);
  });

  it("answers 409 turn_not_latest for a turn that is not the conversation's latest, and changes nothing", async () => {
    const { id, turnIds } = await conversationWith("first question", "second question");
    const stateBefore = contents(await latestState(id));
    const refused = await api.call("POST", `/v1/conversations/${id}/turns/${turnIds[0]}/edit`, { token, json: { content: "too late" } });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({ code: "turn_not_latest", turnId: turnIds[0] });
    expect(contents(await latestState(id))).toEqual(stateBefore);
    expect((await api.call("GET", `/v1/conversations/${id}/turns`, { token })).body.turns).toHaveLength(2);
  });

  it("answers 400 for blank content and 404 for a turn of another conversation", async () => {
    const { id, turnIds } = await conversationWith("a question");
    const other = await conversationWith("elsewhere");
    expect((await api.call("POST", `/v1/conversations/${id}/turns/${turnIds[0]}/edit`, { token, json: { content: "  " } })).status).toBe(400);
    expect((await api.call("POST", `/v1/conversations/${id}/turns/${other.turnIds[0]}/edit`, { token, json: { content: "x" } })).status).toBe(404);
  });
});

describe("POST /v1/conversations/{id}/turns/{turnId}/regenerate", () => {
  it("asks the last question again as a new turn, and a repeat for the replaced turn answers 409", async () => {
    const { id, turnIds } = await conversationWith("first question", "second question");
    const firstAnswer = (await api.call("GET", `/v1/conversations/${id}/turns/${turnIds[1]}`, { token })).body.answer;

    const regenerated = await api.call("POST", `/v1/conversations/${id}/turns/${turnIds[1]}/regenerate`, { token });

    expect(regenerated.status).toBe(200);
    expect(regenerated.body.answer).toMatch(/^answer #\d+ to: second question$/);
    expect(regenerated.body.answer).not.toBe(firstAnswer);
    expect((await latestState(id)).map((m) => m.content)).toEqual([expect.any(String), expect.any(String), "second question", regenerated.body.answer]);
    const again = await api.call("POST", `/v1/conversations/${id}/turns/${turnIds[1]}/regenerate`, { token });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe("turn_not_latest");
  });
});
