import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/api-client.js";

let api: TestServer;
let alice: string;

beforeAll(async () => {
  api = await startTestServer();
  alice = await api.token("alice", { tenant: "acme" });
});
afterAll(() => api.close());

describe("conversations API", () => {
  describe("POST /v1/conversations", () => {
    it("returns 201 with the id and creation time", async () => {
      const res = await api.call("POST", "/v1/conversations", { token: alice });
      expect(res.status).toBe(201);
      expect(res.body.conversationId).toMatch(/^[0-9a-f-]{36}$/);
      expect(Date.parse(res.body.createdAt)).not.toBeNaN();
      expect(res.headers.get("location")).toBe(`/v1/conversations/${res.body.conversationId}`);
    });
  });

  describe("GET /v1/conversations", () => {
    it("lists only the caller's conversations, newest first, in pages", async () => {
      const bob = await api.token("bob", { tenant: "acme" });
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push((await api.call("POST", "/v1/conversations", { token: bob })).body.conversationId);
      await api.call("POST", "/v1/conversations", { token: alice });

      const first = await api.call("GET", "/v1/conversations?limit=2", { token: bob });
      expect(first.status).toBe(200);
      expect(first.body.conversations.map((c: any) => c.conversationId)).toEqual([ids[2], ids[1]]);
      const second = await api.call("GET", `/v1/conversations?limit=2&cursor=${first.body.nextCursor}`, { token: bob });
      expect(second.body.conversations.map((c: any) => c.conversationId)).toEqual([ids[0]]);
      expect(second.body.nextCursor).toBeNull();
    });

    it("answers 400 for a limit out of range or a forged cursor", async () => {
      expect((await api.call("GET", "/v1/conversations?limit=0", { token: alice })).status).toBe(400);
      expect((await api.call("GET", "/v1/conversations?limit=abc", { token: alice })).status).toBe(400);
      expect((await api.call("GET", "/v1/conversations?cursor=not-a-cursor", { token: alice })).status).toBe(400);
    });

    it("answers 400 for a limit that is not written in digits, and for a query parameter it does not take, as the other listings do", async () => {
      for (const query of ["limit=1e1", "limit=0x10", "limit=%205", "limit=2.0", "foo=1"]) {
        const response = await api.call("GET", `/v1/conversations?${query}`, { token: alice });
        expect({ query, status: response.status, code: response.body.error?.code }).toEqual({ query, status: 400, code: "invalid_request" });
      }
      expect((await api.call("GET", "/v1/conversations?limit=10", { token: alice })).status).toBe(200);
    });

    it("answers 400 for a forged cursor of the right shape whose time is no date", async () => {
      for (const forged of [
        [1e300, "x"],
        [1.5, "x"],
      ]) {
        const cursor = Buffer.from(JSON.stringify(forged)).toString("base64url");
        const res = await api.call("GET", `/v1/conversations?cursor=${cursor}`, { token: alice });
        expect(res.status).toBe(400);
        expect(res.body.error.details).toEqual([{ path: "cursor", message: "not a cursor from a previous page" }]);
      }
    });
  });

  describe("GET /v1/conversations/{id}", () => {
    it("returns the metadata of an owned conversation", async () => {
      const { conversationId } = (await api.call("POST", "/v1/conversations", { token: alice })).body;
      const res = await api.call("GET", `/v1/conversations/${conversationId}`, { token: alice });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ conversationId, title: null, channel: "api" });
    });
  });

  describe("a conversation", () => {
    it("remembers the first answer when the second question is asked, and deletion removes it", async () => {
      const { conversationId } = (await api.call("POST", "/v1/conversations", { token: alice })).body;
      const first = await api.call("POST", `/v1/conversations/${conversationId}/messages`, { token: alice, json: { content: "My name is Ada." } });
      expect(first.status).toBe(200);
      expect(first.body.turnId).toMatch(/^[0-9a-f-]{36}$/);
      const second = await api.call("POST", `/v1/conversations/${conversationId}/messages`, { token: alice, json: { content: "What is my name?" } });
      expect(second.body.answer).toBe("Your name is Ada.");
      expect(second.body.usage.inputTokens).toBeGreaterThan(0);
      expect(second.body.context.viewTokens).toBeGreaterThan(0);

      const record = await api.call("GET", `/v1/conversations/${conversationId}/messages`, { token: alice });
      expect(record.body.messages.map((m: any) => [m.role, m.content])).toEqual([
        ["user", "My name is Ada."],
        ["assistant", first.body.answer],
        ["user", "What is my name?"],
        ["assistant", "Your name is Ada."],
      ]);

      const turn = await api.call("GET", `/v1/conversations/${conversationId}/turns/${second.body.turnId}`, { token: alice });
      expect(turn.status).toBe(200);
      expect(turn.body.status).toBe("completed");
      expect(turn.body.calls).toHaveLength(1);
      expect(turn.body.calls[0].view.at(-1)).toMatchObject({ role: "user", content: "What is my name?" });
      expect(turn.body.calls[0].stats.viewTokens).toBeGreaterThan(0);

      expect((await api.call("DELETE", `/v1/conversations/${conversationId}`, { token: alice })).status).toBe(204);
      expect((await api.call("GET", `/v1/conversations/${conversationId}`, { token: alice })).status).toBe(404);
    });
  });

  describe("GET /v1/conversations/{id}/turns/{turnId}", () => {
    it("returns for each model call what its view did with each message of the stored thread", async () => {
      const { conversationId } = (await api.call("POST", "/v1/conversations", { token: alice })).body;
      await api.call("POST", `/v1/conversations/${conversationId}/messages`, { token: alice, json: { content: "My name is Ada." } });
      const second = await api.call("POST", `/v1/conversations/${conversationId}/messages`, { token: alice, json: { content: "What is my name?" } });
      const [turn, thread] = await Promise.all([
        api.call("GET", `/v1/conversations/${conversationId}/turns/${second.body.turnId}`, { token: alice }),
        api.call("GET", `/v1/conversations/${conversationId}/state`, { token: alice }),
      ]);
      const [call] = turn.body.calls;
      expect(call.dispositions.map((d: any) => [d.fate, d.part ?? null, d.turn])).toEqual([
        ["condensed", "question", 0],
        ["condensed", "answer", 0],
        ["sent", null, 1],
      ]);
      call.dispositions.forEach((d: any, i: number) => expect(call.view[d.viewIndex].content).toBe(thread.body.messages[i].content));
    });
  });

  describe("GET /healthz", () => {
    it("answers without a token", async () => {
      const res = await api.call("GET", "/healthz");
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ status: "ok" });
    });
  });
});
