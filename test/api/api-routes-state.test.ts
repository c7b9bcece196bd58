import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/api-client.js";
import { bigReportTool } from "../local/big-report-tool.js";

/** Releases the big_report tool when the test says so; open by default. */
class Gate {
  private release: (() => void) | undefined;
  private closed: Promise<void> | undefined;
  entered: Promise<void>;
  private markEntered!: () => void;

  constructor() {
    this.entered = new Promise((resolve) => (this.markEntered = resolve));
  }

  close(): void {
    this.closed = new Promise((resolve) => (this.release = resolve));
    this.entered = new Promise((resolve) => (this.markEntered = resolve));
  }

  open(): void {
    this.release?.();
    this.closed = undefined;
  }

  async pass(): Promise<void> {
    this.markEntered();
    await this.closed;
  }
}

describe("apiRoutes", () => {
  let t: TestServer;
  let alice: string;
  const gate = new Gate();

  beforeAll(async () => {
    t = await startTestServer({}, { app: { tools: [bigReportTool({ gate: () => gate.pass() })] } });
    alice = await t.token("alice");
  });

  afterAll(async () => {
    await t?.close();
  });

  const newConversation = async (token = alice): Promise<string> => (await t.call("POST", "/v1/conversations", { token })).body.conversationId;

  describe("GET /v1/conversations/{id}/state", () => {
    it("returns every checkpointed message of a turn with tool calls, the offloaded output as its preview and artifact", async () => {
      const id = await newConversation();
      const turn = await t.call("POST", `/v1/conversations/${id}/messages`, { token: alice, json: { content: 'big_report {"rows": 3000}' } });
      expect(turn.status).toBe(200);

      const res = await t.call("GET", `/v1/conversations/${id}/state`, { token: alice });

      expect(res.status).toBe(200);
      const messages = res.body.messages;
      expect(messages.map((m: { role: string }) => m.role)).toEqual(["user", "assistant", "tool", "assistant", "tool", "assistant"]);
      expect(messages[0]).toMatchObject({ id: `${turn.body.turnId}:user`, content: 'big_report {"rows": 3000}' });
      const call = messages[1].toolCalls[0];
      expect(call).toMatchObject({ name: "big_report", args: { rows: 3000 } });
      expect(messages[2]).toMatchObject({ toolCallId: call.id, toolName: "big_report" });
      expect(messages[2].artifact.tokens).toBeGreaterThan(2_000);
      expect(messages[2].artifact.bytes).toBeGreaterThan(messages[2].content.length);
      expect(messages[2].content.startsWith("order_id,region,product,amount_eur")).toBe(true);
      expect(messages[2].tokens).toBeLessThan(messages[2].artifact.tokens);
    });

    it("returns no messages for a conversation without turns", async () => {
      const id = await newConversation();

      const res = await t.call("GET", `/v1/conversations/${id}/state`, { token: alice });

      expect(res).toMatchObject({ status: 200, body: { conversationId: id, messages: [] } });
    });

    it("answers 404 for another user's conversation", async () => {
      const id = await newConversation();

      const res = await t.call("GET", `/v1/conversations/${id}/state`, { token: await t.token("bob") });

      expect(res.status).toBe(404);
    });
  });

  describe("GET /v1/conversations/{id}/turns", () => {
    it("returns the running turn with its progress while its tool runs", async () => {
      const id = await newConversation();
      gate.close();
      const posted = t.call("POST", `/v1/conversations/${id}/messages`, { token: alice, json: { content: 'big_report {"rows": 10}' } });
      await gate.entered;

      const running = await t.call("GET", `/v1/conversations/${id}/turns?status=running`, { token: alice });
      gate.open();
      const done = await posted;

      expect(running.status).toBe(200);
      expect(running.body.turns).toHaveLength(1);
      expect(running.body.turns[0]).toMatchObject({
        turnId: done.body.turnId,
        status: "running",
        progress: { step: "tool", tool: "big_report", modelCalls: 1 },
      });
    });

    it("returns no running turn once the turn completed, and lists it as completed", async () => {
      const id = await newConversation();
      const first = await t.call("POST", `/v1/conversations/${id}/messages`, { token: alice, json: { content: "hello" } });
      const second = await t.call("POST", `/v1/conversations/${id}/messages`, { token: alice, json: { content: "again" } });

      const running = await t.call("GET", `/v1/conversations/${id}/turns?status=running`, { token: alice });
      const all = await t.call("GET", `/v1/conversations/${id}/turns`, { token: alice });

      expect(running.body.turns).toEqual([]);
      expect(all.body.turns.map((x: { turnId: string; status: string }) => [x.turnId, x.status])).toEqual([
        [second.body.turnId, "completed"],
        [first.body.turnId, "completed"],
      ]);
    });

    it("throws when the status filter is not a turn status (400)", async () => {
      const id = await newConversation();

      const res = await t.call("GET", `/v1/conversations/${id}/turns?status=sleeping`, { token: alice });

      expect(res.status).toBe(400);
    });
  });
});
