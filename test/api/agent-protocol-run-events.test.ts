import { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_PROTOCOL_ASSISTANT_ID } from "../../lib/api/agent-protocol-schemas.js";
import { startTestServer, type TestServer } from "../support/api-client.js";
import { conformingFetch } from "../support/openapi-conformance.js";

/**
 * A run's events as the protocol streams them (`runEvents` in lib/api/agent-protocol-run-events.ts),
 * read through LangGraph's own client against the local server with the offline model.
 */
let api: TestServer;
let ada: Client;

const human = (content: string) => ({ messages: [{ type: "human", content }] });

beforeAll(async () => {
  api = await startTestServer();
  ada = new Client({
    apiUrl: api.url,
    defaultHeaders: { authorization: `Bearer ${await api.token("ada")}` },
    callerOptions: { maxRetries: 0, fetch: conformingFetch },
  });
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

describe("agent-protocol-run-events", () => {
  describe("runStream", () => {
    it("streams a run with every served mode", async () => {
      const thread = await ada.threads.create();
      let created: { run_id: string } | undefined;
      const events = await collect(
        ada.runs.stream(thread.thread_id, AGENT_PROTOCOL_ASSISTANT_ID, {
          input: human('sql_query {"sql": "SELECT count(*) AS n FROM customers"}'),
          streamMode: ["values", "messages-tuple", "updates", "custom", "events"],
          onRunCreated: (run) => {
            created = run;
          },
        }),
      );
      const names = events.map((e) => e.event);
      expect(names[0]).toBe("metadata");
      expect(created?.run_id).toBe(events[0].data.run_id);
      expect(names).toContain("messages");
      expect(names).toContain("custom");
      expect(names).toContain("events");
      const updates = events.filter((e) => e.event === "updates").map((e) => Object.keys(e.data)[0]);
      expect(updates).toEqual(["agent", "tools", "agent"]);
      const values = events.filter((e) => e.event === "values");
      expect(values.at(-1)?.data.messages.map((m: any) => m.type)).toEqual(["human", "ai", "tool", "ai"]);
      const streamed = events
        .filter((e) => e.event === "messages")
        .map((e) => e.data[0].content)
        .join("");
      expect(streamed.length).toBeGreaterThan(0);
      expect(values.at(-1)?.data.messages.at(-1).content).toContain(streamed.slice(0, 10));
      expect(await ada.runs.get(thread.thread_id, created!.run_id)).toMatchObject({ status: "success" });
    });

    it("streams messages-tuple chunks under the id of the message the thread keeps", async () => {
      const thread = await ada.threads.create();
      const events = await collect(
        ada.runs.stream(thread.thread_id, AGENT_PROTOCOL_ASSISTANT_ID, {
          input: human('sql_query {"sql": "SELECT count(*) AS n FROM customers"}'),
          streamMode: ["messages-tuple", "values"],
        }),
      );
      const chunkIds = new Set(events.filter((e) => e.event === "messages").map((e) => e.data[0].id));
      expect(chunkIds.size).toBeGreaterThan(0);
      const kept = events
        .filter((e) => e.event === "values")
        .at(-1)
        ?.data.messages.filter((m: any) => m.type === "ai");
      const answer = kept.at(-1);
      expect(chunkIds).toContain(answer.id);
      expect([...chunkIds].every((id) => kept.some((m: any) => m.id === id))).toBe(true);
      const state = await ada.threads.getState(thread.thread_id);
      expect((state.values as any).messages.at(-1).id).toBe(answer.id);
    });
  });
});
