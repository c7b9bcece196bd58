import { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_PROTOCOL_ASSISTANT_ID } from "../../lib/api/agent-protocol-schemas.js";
import { startTestServer, type TestServer } from "../support/api-client.js";
import { conformingFetch } from "../support/openapi-conformance.js";

/**
 * The Agent Protocol's routes as `agentProtocolRoutes` assembles them (lib/api/agent-protocol-routes.ts):
 * who may reach a thread and a run, and what the protocol does not serve.
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

describe("agentProtocolRoutes", () => {
  describe("ownership", () => {
    it("returns 404 for another user's thread and for a run named under a thread it is not of", async () => {
      const thread = await ada.threads.create();
      const other = await ada.threads.create();
      await ada.runs.wait(thread.thread_id, AGENT_PROTOCOL_ASSISTANT_ID, { input: human("hello") });
      const [run] = await ada.runs.list(thread.thread_id);
      expect(await ada.runs.get(thread.thread_id, run.run_id)).toMatchObject({ run_id: run.run_id });
      await expect(ada.runs.get(other.thread_id, run.run_id)).rejects.toThrow(/404/);
      await expect(bob.runs.get(thread.thread_id, run.run_id)).rejects.toThrow(/404/);
      await expect(bob.threads.getState(thread.thread_id)).rejects.toThrow(/404/);
    });
  });

  describe("unsupported routes", () => {
    it("returns 404 without Allow for a method the protocol does not serve on a path it serves otherwise", async () => {
      const thread = await ada.threads.create();
      const run = async (path: string, method: string) => {
        const response = await fetch(`${api.url}${path}`, {
          method,
          headers: { authorization: `Bearer ${await api.token("ada")}`, "content-type": "application/json" },
          body: method === "GET" || method === "DELETE" ? undefined : "{}",
        });
        return { status: response.status, allow: response.headers.get("allow"), code: ((await response.json()) as any).error?.code };
      };
      const unsupported: [string, string][] = [
        ["/threads/prune", "POST"],
        ["/threads/count", "POST"],
        [`/threads/${thread.thread_id}/state`, "POST"],
        [`/threads/${thread.thread_id}/runs/${crypto.randomUUID()}`, "DELETE"],
        [`/assistants/${AGENT_PROTOCOL_ASSISTANT_ID}`, "PATCH"],
        [`/assistants/${AGENT_PROTOCOL_ASSISTANT_ID}`, "DELETE"],
        ["/runs", "POST"],
      ];
      for (const [path, method] of unsupported)
        expect({ path, method, ...(await run(path, method)) }).toEqual({ path, method, status: 404, allow: null, code: "not_found" });
    });
  });
});
