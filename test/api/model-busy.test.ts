import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lastUserText } from "../support/converse-endpoint.js";
import { startServerWithModel, type ModelServer } from "../support/model-server.js";
import { openEventStream } from "../support/sse-client.js";

let server: ModelServer;

beforeAll(async () => {
  // What Bedrock answers when the account's quota is used up (after the SDK's own three attempts, still this).
  server = await startServerWithModel((request) =>
    lastUserText(request).includes("busy")
      ? { error: { status: 429, type: "ThrottlingException", message: "Too many requests, please wait before trying again." } }
      : { text: "fine" },
  );
});
afterAll(() => server?.close());

async function conversation(): Promise<{ token: string; id: string }> {
  const token = await server.api.token("alice");
  const id = (await server.api.call("POST", "/v1/conversations", { token })).body.conversationId as string;
  return { token, id };
}

describe("a turn whose model calls Bedrock throttles", () => {
  describe("POST /v1/conversations/{id}/messages", () => {
    it("returns 503 model_busy with Retry-After, and stores the turn as failed with code model_busy and its reason", async () => {
      const { api } = server;
      const { token, id } = await conversation();
      const response = await api.call("POST", `/v1/conversations/${id}/messages`, { token, json: { content: "are you busy?" } });
      expect(response.status).toBe(503);
      expect(response.headers.get("retry-after")).toBe("10");
      expect(response.body.error).toEqual({
        code: "model_busy",
        message: "the model is busy (ThrottlingException); retry later",
        reason: "ThrottlingException (HTTP 429)",
      });
      const [turn] = (await api.call("GET", `/v1/conversations/${id}/turns`, { token })).body.turns;
      const detail = await api.call("GET", `/v1/conversations/${id}/turns/${turn.turnId}`, { token });
      expect(detail.body).toMatchObject({ status: "failed", error: { code: "model_busy", message: "the turn failed: ThrottlingException (HTTP 429)" } });
    });
  });

  describe("POST /v1/conversations/{id}/messages with Accept: text/event-stream", () => {
    it("ends the stream with a failed event of code model_busy", async () => {
      const { token, id } = await conversation();
      const stream = await openEventStream(`${server.api.url}/v1/conversations/${id}/messages`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "text/event-stream" },
        body: JSON.stringify({ content: "busy again?" }),
      });
      const events = await stream.rest();
      expect(events.at(-1)).toMatchObject({ event: "failed", data: { code: "model_busy", message: "the turn failed: ThrottlingException (HTTP 429)" } });
    });
  });
});
