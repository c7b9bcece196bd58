import { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_PROTOCOL_ASSISTANT_ID } from "../../lib/api/agent-protocol-schemas.js";
import { startTestServer, type TestServer } from "../support/api-client.js";
import { conformingFetch } from "../support/openapi-conformance.js";

/**
 * The Agent Protocol's assistant and thread routes (lib/api/agent-protocol-thread-routes.ts) through
 * LangGraph's own client, against the local server.
 */
let api: TestServer;
let ada: Client;
let bob: Client;

const human = (content: string) => ({ messages: [{ type: "human", content }] });

beforeAll(async () => {
  api = await startTestServer();
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

describe("agent-protocol-thread-routes", () => {
  describe("assistants", () => {
    it("returns the one assistant, by id and in a search, and 404 for another id", async () => {
      expect(await ada.assistants.get(AGENT_PROTOCOL_ASSISTANT_ID)).toMatchObject({
        assistant_id: AGENT_PROTOCOL_ASSISTANT_ID,
        graph_id: AGENT_PROTOCOL_ASSISTANT_ID,
      });
      expect((await ada.assistants.search()).map((a) => a.assistant_id)).toEqual([AGENT_PROTOCOL_ASSISTANT_ID]);
      await expect(ada.assistants.get("other-graph")).rejects.toThrow(/404/);
    });
  });

  describe("threads", () => {
    it("creates, reads, patches, searches and deletes a thread as the SDK does", async () => {
      const thread = await ada.threads.create({ metadata: { project: "alpha" } });
      expect(thread).toMatchObject({ status: "idle", metadata: { project: "alpha" }, values: { messages: [] }, interrupts: {} });
      expect(await ada.threads.get(thread.thread_id)).toMatchObject({ thread_id: thread.thread_id });

      const patched = await ada.threads.update(thread.thread_id, { metadata: { stage: 2 } });
      expect(patched.metadata).toEqual({ project: "alpha", stage: 2 });

      const other = await ada.threads.create({ metadata: { project: "beta" } });
      const found = await ada.threads.search({ metadata: { project: "alpha" } });
      expect(found.map((t) => t.thread_id)).toEqual([thread.thread_id]);
      expect((await ada.threads.search({ limit: 100 })).map((t) => t.thread_id)).toEqual(expect.arrayContaining([thread.thread_id, other.thread_id]));

      await ada.threads.delete(thread.thread_id);
      await expect(ada.threads.get(thread.thread_id)).rejects.toThrow(/404/);
    });

    it("refuses another user's thread with 404 and leaves it out of their search", async () => {
      const thread = await ada.threads.create();
      await expect(bob.threads.get(thread.thread_id)).rejects.toThrow(/404/);
      await expect(bob.threads.getState(thread.thread_id)).rejects.toThrow(/404/);
      await expect(bob.runs.wait(thread.thread_id, AGENT_PROTOCOL_ASSISTANT_ID, { input: human("hello") })).rejects.toThrow(/404/);
      await expect(bob.threads.delete(thread.thread_id)).rejects.toThrow(/404/);
      expect((await bob.threads.search({ limit: 100 })).map((t) => t.thread_id)).not.toContain(thread.thread_id);
      expect(await ada.threads.get(thread.thread_id)).toMatchObject({ thread_id: thread.thread_id });
    });

    it("creates a thread under a client's id, once", async () => {
      const threadId = crypto.randomUUID();
      await ada.threads.create({ threadId });
      expect((await ada.threads.create({ threadId, ifExists: "do_nothing" })).thread_id).toBe(threadId);
      await expect(ada.threads.create({ threadId })).rejects.toThrow(/409/);
      await expect(bob.threads.create({ threadId, ifExists: "do_nothing" })).rejects.toThrow(/409/);
    });
  });
});
