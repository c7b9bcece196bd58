import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lastUserText } from "../support/converse-endpoint.js";
import { startServerWithModel, type ModelServer } from "../support/model-server.js";

let server: ModelServer;

beforeAll(async () => {
  // What Bedrock answers a caller without model access (a missing subscription or IAM grant).
  server = await startServerWithModel((request) =>
    lastUserText(request).includes("denied")
      ? { error: { status: 403, type: "AccessDeniedException", message: "You don't have access to the model with the specified model ID." } }
      : { text: "fine" },
  );
});
afterAll(() => server?.close());

describe("model credentials refused during a turn", () => {
  describe("POST /v1/conversations/{id}/messages", () => {
    it("returns 503 model_credentials saying what to do, and stores the turn as failed with that code", async () => {
      const { api } = server;
      const token = await api.token("alice");
      const id = (await api.call("POST", "/v1/conversations", { token })).body.conversationId as string;
      const response = await api.call("POST", `/v1/conversations/${id}/messages`, { token, json: { content: "access denied?" } });
      expect(response.status).toBe(503);
      expect(response.body.error).toEqual({
        code: "model_credentials",
        message: expect.stringMatching(/^the model cannot be called with this process's AWS credentials \(AccessDeniedException\); .*Troubleshooting/),
      });
      const [turn] = (await api.call("GET", `/v1/conversations/${id}/turns`, { token })).body.turns;
      const detail = await api.call("GET", `/v1/conversations/${id}/turns/${turn.turnId}`, { token });
      expect(detail.body).toMatchObject({ status: "failed", error: { code: "model_credentials" } });
    });
  });
});
