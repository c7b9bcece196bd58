import { Client } from "@langchain/langgraph-sdk";
import { z } from "zod";
import type { ToolDefinition } from "../../lib/tools/tool.js";
import { Gate } from "../support/gate.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_PROTOCOL_ASSISTANT_ID } from "../../lib/api/agent-protocol-schemas.js";
import { startTestServer, type TestServer } from "../support/api-client.js";
import { conformingFetch } from "../support/openapi-conformance.js";

/**
 * The Agent Protocol's run routes (lib/api/agent-protocol-run-routes.ts) through LangGraph's own
 * client (`@langchain/langgraph-sdk`), against the local server with the offline model: what a
 * team's existing LangGraph frontend would send.
 */
let api: TestServer;
let ada: Client;
let bob: Client;

const FOLLOW_UP = 'create_follow_up {"title": "Call the top customer"}';
const human = (content: string) => ({ messages: [{ type: "human", content }] });

beforeAll(async () => {
  api = await startTestServer({ TOOL_APPROVALS: '{"create_follow_up": {"require": "always"}}' });
  const client = async (user: string) =>
    new Client({
      apiUrl: api.url,
      defaultHeaders: { authorization: `Bearer ${await api.token(user)}` },
      callerOptions: { maxRetries: 0, fetch: conformingFetch },
    });
  ada = await client("ada");
  bob = await client("bob");
});

afterAll(async () => {
  await api?.close();
});

/** Every event of a stream, in order. */
async function collect(stream: AsyncIterable<{ event: string; data: unknown }>) {
  const events: { event: string; data: any }[] = [];
  for await (const part of stream) events.push(part);
  return events;
}

describe("Agent Protocol", () => {
  describe("runs", () => {
    it("waits for a run and returns the thread's values, and reads state and history", async () => {
      const thread = await ada.threads.create();
      const values = (await ada.runs.wait(thread.thread_id, AGENT_PROTOCOL_ASSISTANT_ID, { input: human("My name is Ada.") })) as any;
      expect(values.messages.map((m: any) => m.type)).toEqual(["human", "ai"]);
      expect(values.messages[0].content).toBe("My name is Ada.");

      await ada.runs.wait(thread.thread_id, AGENT_PROTOCOL_ASSISTANT_ID, { input: human("What is my name?") });
      const state = await ada.threads.getState(thread.thread_id);
      expect((state.values as any).messages).toHaveLength(4);
      expect(state.next).toEqual([]);
      expect(state.checkpoint.checkpoint_id).toEqual(expect.any(String));

      const history = await ada.threads.getHistory(thread.thread_id, { limit: 20 });
      expect(history.length).toBeGreaterThanOrEqual(2);
      expect(history[0].checkpoint.checkpoint_id).toBe(state.checkpoint.checkpoint_id);
      const lengths = history.map((h) => (h.values as any).messages.length);
      expect([...lengths].sort((a, b) => b - a)).toEqual(lengths);

      const runs = await ada.runs.list(thread.thread_id);
      expect(runs.map((r) => r.status)).toEqual(["success", "success"]);
      expect(await ada.runs.get(thread.thread_id, runs[0].run_id)).toMatchObject({ status: "success", assistant_id: AGENT_PROTOCOL_ASSISTANT_ID });
      expect(((await ada.runs.join(thread.thread_id, runs[0].run_id)) as any).messages).toHaveLength(4);
    });

    it("refuses a mode it does not serve, an unknown assistant and fields it cannot honour", async () => {
      const thread = await ada.threads.create();
      await expect(collect(ada.runs.stream(thread.thread_id, AGENT_PROTOCOL_ASSISTANT_ID, { input: human("hi"), streamMode: "debug" }))).rejects.toThrow(/400/);
      await expect(ada.runs.wait(thread.thread_id, "other-graph", { input: human("hi") })).rejects.toThrow(/404/);
      await expect(ada.runs.wait(thread.thread_id, AGENT_PROTOCOL_ASSISTANT_ID, { input: human("hi"), interruptBefore: ["tools"] })).rejects.toThrow(/400/);
      await expect(ada.runs.wait(thread.thread_id, AGENT_PROTOCOL_ASSISTANT_ID, { input: human("hi"), multitaskStrategy: "rollback" })).rejects.toThrow(/400/);
      expect((await ada.threads.getState(thread.thread_id)).values).toEqual({ messages: [] });
    });
  });

  describe("interrupts", () => {
    it("surfaces an approval as an interrupt and resumes it with a Command, through the approval path", async () => {
      const thread = await ada.threads.create();
      const paused = (await ada.runs.wait(thread.thread_id, AGENT_PROTOCOL_ASSISTANT_ID, { input: human(FOLLOW_UP) })) as any;
      expect(paused.__interrupt__).toHaveLength(1);
      const [approval] = paused.__interrupt__[0].value.approvals;
      expect(approval).toMatchObject({ tool: "create_follow_up", args: { title: "Call the top customer" } });
      expect(await ada.threads.get(thread.thread_id)).toMatchObject({ status: "interrupted" });
      expect(await api.db.collection("follow_ups").countDocuments({ conversationId: thread.thread_id })).toBe(0);

      // Another user cannot decide it; a malformed decision changes nothing.
      await expect(bob.runs.wait(thread.thread_id, AGENT_PROTOCOL_ASSISTANT_ID, { command: { resume: "approve" } })).rejects.toThrow(/404/);
      await expect(ada.runs.wait(thread.thread_id, AGENT_PROTOCOL_ASSISTANT_ID, { command: { resume: { decision: "maybe" } } })).rejects.toThrow(/400/);

      const events = await collect(
        ada.runs.stream(thread.thread_id, AGENT_PROTOCOL_ASSISTANT_ID, {
          command: { resume: { decisions: { [approval.approvalId]: "approve" } } },
          streamMode: ["values"],
        }),
      );
      const last = events.filter((e) => e.event === "values").at(-1)?.data;
      expect(last.messages.at(-1).type).toBe("ai");
      expect(last.__interrupt__).toBeUndefined();
      expect(await api.db.collection("follow_ups").countDocuments({ conversationId: thread.thread_id })).toBe(1);
      const approvals = await api.call("GET", `/v1/conversations/${thread.thread_id}/approvals`, { token: await api.token("ada") });
      expect(approvals.body.approvals[0]).toMatchObject({ status: "approved", decision: { decision: "approve" } });
      expect(await ada.threads.get(thread.thread_id)).toMatchObject({ status: "idle" });
    });

    it("cancels a run waiting for approval by rejecting its calls", async () => {
      const thread = await ada.threads.create();
      await ada.runs.wait(thread.thread_id, AGENT_PROTOCOL_ASSISTANT_ID, { input: human(FOLLOW_UP) });
      const [run] = await ada.runs.list(thread.thread_id);
      expect(run.status).toBe("interrupted");
      await ada.runs.cancel(thread.thread_id, run.run_id);
      const values = (await ada.runs.join(thread.thread_id, run.run_id)) as any;
      expect(values.__interrupt__).toBeUndefined();
      expect(await api.db.collection("follow_ups").countDocuments({ conversationId: thread.thread_id })).toBe(0);
      expect((await ada.runs.get(thread.thread_id, run.run_id)).status).toBe("success");
      await expect(ada.runs.cancel(thread.thread_id, run.run_id)).rejects.toThrow(/409/);
    });
  });

  describe("multitask strategies", () => {
    let gate = new Gate();
    const waitTool: ToolDefinition = {
      name: "wait_for_test",
      description: "Waits until the test lets it finish.",
      schema: z.object({}),
      sideEffects: false,
      run: async () => {
        await gate.pass();
        return "finished waiting";
      },
    };
    let held: TestServer;
    let client: Client;

    beforeAll(async () => {
      held = await startTestServer({}, { app: { tools: [waitTool] } });
      client = new Client({ apiUrl: held.url, defaultHeaders: { authorization: `Bearer ${await held.token("ada")}` }, callerOptions: { maxRetries: 0 } });
    });

    afterAll(async () => {
      gate.open();
      await held?.close();
    });

    it("refuses a run while another runs (reject, the default) with 409 and Retry-After, and leaves the thread as it was", async () => {
      gate = new Gate();
      const thread = await client.threads.create();
      const first = client.runs.wait(thread.thread_id, AGENT_PROTOCOL_ASSISTANT_ID, { input: human("wait_for_test {}") });
      await gate.reached;
      const refused = await fetch(`${held.url}/threads/${thread.thread_id}/runs/wait`, {
        method: "POST",
        headers: { authorization: `Bearer ${await held.token("ada")}`, "content-type": "application/json" },
        body: JSON.stringify({ assistant_id: AGENT_PROTOCOL_ASSISTANT_ID, input: human("and another") }),
      });
      expect(refused.status).toBe(409);
      expect(refused.headers.get("retry-after")).toMatch(/^\d+$/);
      expect(await client.threads.get(thread.thread_id)).toMatchObject({ status: "busy" });
      gate.open();
      expect(((await first) as { messages: unknown[] }).messages).toHaveLength(4);
      expect((await client.runs.list(thread.thread_id)).map((r) => r.status)).toEqual(["success"]);
    });

    it("queues a run while another runs (enqueue): it runs once the thread is free", async () => {
      gate = new Gate();
      const thread = await client.threads.create();
      const first = client.runs.wait(thread.thread_id, AGENT_PROTOCOL_ASSISTANT_ID, { input: human("wait_for_test {}") });
      await gate.reached;
      const second = client.runs.wait(thread.thread_id, AGENT_PROTOCOL_ASSISTANT_ID, { input: human("and then this"), multitaskStrategy: "enqueue" });
      gate.open();
      await first;
      const values = (await second) as { messages: { type: string; content: string }[] };
      expect(values.messages.map((m) => m.type)).toEqual(["human", "ai", "tool", "ai", "human", "ai"]);
      expect(values.messages[4].content).toBe("and then this");
      expect((await client.runs.list(thread.thread_id)).map((r) => r.status)).toEqual(["success", "success"]);
    }, 60_000);
  });
});
