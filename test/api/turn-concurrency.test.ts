import type { BaseMessage } from "@langchain/core/messages";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { COLLECTIONS } from "../../lib/store/collections.js";
import { startTestServer, type TestServer } from "../support/api-client.js";

let api: TestServer;
let token: string;

beforeAll(async () => {
  api = await startTestServer();
  token = await api.token("alice");
});
afterAll(() => api.close());

async function newConversation(): Promise<string> {
  return (await api.call("POST", "/v1/conversations", { token })).body.conversationId;
}

describe("POST /v1/conversations/{id}/messages", () => {
  it("runs one turn at a time under a race of concurrent posts, and the thread stays linear", async () => {
    const id = await newConversation();
    const posts = await Promise.all(
      Array.from({ length: 12 }, (_, i) => api.call("POST", `/v1/conversations/${id}/messages`, { token, json: { content: `question ${i}` } })),
    );
    const ok = posts.filter((p) => p.status === 200);
    const conflicts = posts.filter((p) => p.status === 409);
    expect(ok.length + conflicts.length).toBe(posts.length);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    expect(conflicts.length).toBeGreaterThanOrEqual(1);
    for (const c of conflicts) {
      expect(c.body.error.code).toBe("conflict");
      expect(Number(c.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    }

    const record = (await api.call("GET", `/v1/conversations/${id}/messages`, { token })).body.messages;
    expect(record).toHaveLength(ok.length * 2);
    const state = await api.server.app.database.checkpointer.getTuple({ configurable: { thread_id: id } });
    const messages = state?.checkpoint.channel_values.messages as BaseMessage[];
    // A forked chain would lose one branch's messages: every accepted turn is in the one thread, in order.
    expect(messages.map((m) => m.getType())).toEqual(ok.flatMap(() => ["human", "ai"]));
    const turnsRecorded = await api.db.collection(COLLECTIONS.turns).countDocuments({ conversationId: id, status: "completed" });
    expect(turnsRecorded).toBe(ok.length);
  });

  describe("with an Idempotency-Key", () => {
    it("returns the first response to a repeat and runs the turn once", async () => {
      const id = await newConversation();
      const send = () => api.call("POST", `/v1/conversations/${id}/messages`, { token, json: { content: "hello" }, headers: { "idempotency-key": "k-1" } });
      const first = await send();
      const again = await send();
      expect(first.status).toBe(200);
      expect(again.status).toBe(200);
      expect(again.body).toEqual(first.body);
      expect((await api.call("GET", `/v1/conversations/${id}/messages`, { token })).body.messages).toHaveLength(2);
    });

    it("answers 409 to a repeat while the first is in progress", async () => {
      const id = await newConversation();
      const send = () => api.call("POST", `/v1/conversations/${id}/messages`, { token, json: { content: "hello" }, headers: { "idempotency-key": "k-2" } });
      const results = await Promise.all([send(), send(), send()]);
      const statuses = results.map((r) => r.status).sort();
      expect(statuses[0]).toBe(200);
      expect(statuses.every((s) => s === 200 || s === 409)).toBe(true);
      const answers = new Set(results.filter((r) => r.status === 200).map((r) => r.body.turnId));
      expect(answers.size).toBe(1);
      expect((await api.call("GET", `/v1/conversations/${id}/messages`, { token })).body.messages).toHaveLength(2);
    });

    it("answers 422 when the key is reused with another body, and changes nothing", async () => {
      const id = await newConversation();
      await api.call("POST", `/v1/conversations/${id}/messages`, { token, json: { content: "hello" }, headers: { "idempotency-key": "k-3" } });
      const reused = await api.call("POST", `/v1/conversations/${id}/messages`, { token, json: { content: "something else" }, headers: { "idempotency-key": "k-3" } });
      expect(reused.status).toBe(422);
      expect(reused.body.error.code).toBe("idempotency_key_reused");
      expect((await api.call("GET", `/v1/conversations/${id}/messages`, { token })).body.messages).toHaveLength(2);
    });

    it("does not share a key between users", async () => {
      const id = await newConversation();
      const bob = await api.token("bob");
      const bobs = await newConversationFor(bob);
      const a = await api.call("POST", `/v1/conversations/${id}/messages`, { token, json: { content: "hello" }, headers: { "idempotency-key": "shared" } });
      const b = await api.call("POST", `/v1/conversations/${bobs}/messages`, { token: bob, json: { content: "hello" }, headers: { "idempotency-key": "shared" } });
      expect(b.status).toBe(200);
      expect(b.body.turnId).not.toBe(a.body.turnId);
    });
  });
});

async function newConversationFor(t: string): Promise<string> {
  return (await api.call("POST", "/v1/conversations", { token: t })).body.conversationId;
}
