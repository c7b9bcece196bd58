import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LOCAL_MODEL_EXAMPLES } from "../../lib/agent/local-chat-model.js";
import { SAMPLE_QUESTIONS } from "../../lib/tools/sample-questions.js";
import { startTestServer, type TestServer } from "../support/api-client.js";

interface ListedTool {
  name: string;
  description: string;
  arguments: string;
  examples: string[];
}

describe("localToolsRoute", () => {
  let t: TestServer;

  beforeAll(async () => {
    t = await startTestServer({ TOOL_ROLES: JSON.stringify({ create_follow_up: ["analyst"] }) });
  });

  afterAll(async () => {
    await t?.close();
  });

  describe("GET /local/tools", () => {
    it("returns the tools the caller may use, each with its arguments and the sample questions its data answers", async () => {
      const res = await t.call("GET", "/local/tools", { token: await t.token("alice") });
      expect(res.status).toBe(200);
      const tools = res.body.tools as ListedTool[];
      expect(tools.map((tool) => tool.name)).toEqual(["sql_query", "search_documents", "read_tool_output", "search_conversation"]);
      expect(tools[0]).toMatchObject({ arguments: '{"sql": string}', examples: SAMPLE_QUESTIONS.sql_query });
      expect(tools[0].description).toMatch(/^Run one read-only SQLite query against the sales database/);
      expect(tools[1].examples).toEqual(SAMPLE_QUESTIONS.search_documents);
      expect(tools[2].examples).toEqual([]);
      expect(res.body).toMatchObject({ model: "local", conversation: LOCAL_MODEL_EXAMPLES });
    });

    it("returns a tool its roles allow only to a caller with one of them", async () => {
      const res = await t.call("GET", "/local/tools", { token: await t.token("bob", { roles: ["analyst"] }) });
      const followUp = (res.body.tools as ListedTool[]).find((tool) => tool.name === "create_follow_up");
      expect(followUp).toMatchObject({
        arguments: '{"title": string, "details"?: string, "owner"?: string, "dueDate"?: string}',
        examples: SAMPLE_QUESTIONS.create_follow_up,
      });
    });

    it("throws 401 without a token", async () => {
      expect((await t.call("GET", "/local/tools")).status).toBe(401);
    });
  });
});
