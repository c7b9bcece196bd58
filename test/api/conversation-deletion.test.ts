import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { COLLECTIONS } from "../../lib/store/collections.js";
import type { TestServer } from "../support/api-client.js";
import { lastUserText } from "../support/converse-endpoint.js";
import { Gate } from "../support/gate.js";
import { startServerWithModel, type ModelServer } from "../support/model-server.js";

let server: ModelServer;
let api: TestServer;
let token: string;
/** Model calls for a question containing "hold" wait here until the test opens the gate. */
let gate = new Gate();

beforeAll(async () => {
  server = await startServerWithModel(async (request) => {
    const text = lastUserText(request);
    if (text.includes("hold")) await gate.pass();
    return { text: `answer to: ${text}` };
  });
  api = server.api;
  token = await api.token("alice");
});

afterAll(async () => {
  gate.open();
  await server?.close();
});

/** Every document of any collection that names the conversation, by collection. */
async function leftovers(conversationId: string): Promise<Record<string, number>> {
  const found: Record<string, number> = {};
  for (const name of Object.values(COLLECTIONS)) {
    const n = await api.db.collection(name).countDocuments({ $or: [{ _id: conversationId as never }, { conversationId }, { thread_id: conversationId }] });
    if (n > 0) found[name] = n;
  }
  return found;
}

describe("DELETE /v1/conversations/{id}", () => {
  it("stops the running turn, and nothing of the conversation is left in any collection once it has stopped", async () => {
    gate = new Gate();
    const id = (await api.call("POST", "/v1/conversations", { token })).body.conversationId as string;
    await api.call("POST", `/v1/conversations/${id}/messages`, { token, json: { content: "a first question" } });
    const running = api.call("POST", `/v1/conversations/${id}/messages`, { token, json: { content: "hold this one" } });
    await gate.reached;

    const deleted = await api.call("DELETE", `/v1/conversations/${id}`, { token });
    expect(deleted.status).toBe(204);
    gate.open();
    const stopped = await running;

    expect(stopped.status).toBe(404);
    expect(stopped.body.error.code).toBe("not_found");
    await api.server.turnQueue.drain();
    expect(await leftovers(id)).toEqual({});
  });

  it("answers 204 to a conversation with no turn running, and 404 once it is gone", async () => {
    const id = (await api.call("POST", "/v1/conversations", { token })).body.conversationId as string;
    await api.call("POST", `/v1/conversations/${id}/messages`, { token, json: { content: "hello" } });
    expect((await api.call("DELETE", `/v1/conversations/${id}`, { token })).status).toBe(204);
    expect(await leftovers(id)).toEqual({});
    expect((await api.call("DELETE", `/v1/conversations/${id}`, { token })).status).toBe(404);
  });
});

describe("DELETE /v1/conversations/{id} (what expires by itself)", () => {
  it("leaves none of the conversation's idempotency records (requests and tool effects), which hold its answers", async () => {
    const id = (await api.call("POST", "/v1/conversations", { token })).body.conversationId as string;
    for (const [key, content] of [
      ["k-1", "the first keyed question"],
      ["k-2", "the second keyed question"],
    ]) {
      const asked = await api.call("POST", `/v1/conversations/${id}/messages`, { token, json: { content }, headers: { "idempotency-key": key } });
      expect(asked.status).toBe(200);
    }
    const holdingIt = async () =>
      (await api.db.collection(COLLECTIONS.idempotency).find({}).toArray()).filter((d) => JSON.stringify(d).includes(id) || d.conversationId === id).length;
    expect(await holdingIt()).toBe(2);

    expect((await api.call("DELETE", `/v1/conversations/${id}`, { token })).status).toBe(204);

    expect(await holdingIt()).toBe(0);
  });
});

describe("POST /v1/conversations/{id}/messages", () => {
  it("writes every document of the conversation with an expiry from its first write, before the turn ends", async () => {
    gate = new Gate();
    const id = (await api.call("POST", "/v1/conversations", { token })).body.conversationId as string;
    const running = api.call("POST", `/v1/conversations/${id}/messages`, { token, json: { content: "hold and check expiry" } });
    await gate.reached;
    const unexpiring: Record<string, number> = {};
    for (const name of Object.values(COLLECTIONS)) {
      const n = await api.db
        .collection(name)
        .countDocuments({ $or: [{ _id: id as never }, { conversationId: id }, { thread_id: id }], expiresAt: { $exists: false } });
      if (n > 0) unexpiring[name] = n;
    }
    gate.open();
    expect((await running).status).toBe(200);
    expect(unexpiring).toEqual({});
  });
});
