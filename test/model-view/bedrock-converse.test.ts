import { ChatBedrockConverse } from "@langchain/aws";
import type { BaseMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import fc from "fast-check";
import { z } from "zod";
import { ContextBudgetExceededError } from "../../lib/errors.js";
import { buildModelView } from "../../lib/model-view/index.js";
import { startConverseEndpoint, type ConverseEndpoint } from "../support/converse-endpoint.js";
import { calls, policy, result, user } from "./histories.js";
import { historyOf, historySpec, policySpec } from "./history-arbitrary.js";

const MODEL_ID = "us.anthropic.claude-sonnet-4-20250514-v1:0";

let endpoint: ConverseEndpoint;

beforeAll(async () => {
  endpoint = await startConverseEndpoint();
  // The AWS SDK reads AWS_ENDPOINT_URL_BEDROCK_RUNTIME itself: the client is configured as in production.
  for (const [name, value] of Object.entries(endpoint.environment)) vi.stubEnv(name, value);
});

afterAll(async () => {
  vi.unstubAllEnvs();
  await endpoint.close();
});

/** The real client, bound to every tool the generated histories call. */
function chat() {
  const tools = ["sql_query", "search_documents", "power_bi", "create_task", "read_tool_output"].map((name) =>
    tool(async () => "unused", { name, description: `The ${name} tool`, schema: z.object({ query: z.string() }) }),
  );
  return new ChatBedrockConverse({ model: MODEL_ID, region: "us-east-1", temperature: 0, maxTokens: 256 }).bindTools(tools);
}

/** The status the endpoint answered the request with. */
async function send(messages: BaseMessage[]): Promise<{ status: number; error?: string }> {
  const before = endpoint.requests.length;
  await chat()
    .invoke(messages)
    .catch(() => undefined);
  const request = endpoint.requests[before];
  return { status: request.status, error: request.errorMessage };
}

describe("model view", () => {
  describe("buildModelView (through ChatBedrockConverse)", () => {
    it("returns a view Bedrock accepts where the raw history is rejected", async () => {
      const state = [user("q1"), calls([["c1", "sql_query"], ["c2", "sql_query"]]), result("c1", "north,1200"), user("q2")];
      expect((await send(state)).status).toBe(400);
      expect(await send(buildModelView(state, policy()).messages)).toEqual({ status: 200, error: undefined });
    });

    it("returns views Bedrock accepts for many-shaped broken histories", async () => {
      await fc.assert(
        fc.asyncProperty(historySpec, policySpec, async (spec, viewPolicy) => {
          let view;
          try {
            view = buildModelView(historyOf(spec), viewPolicy);
          } catch (error) {
            if (error instanceof ContextBudgetExceededError) return;
            throw error;
          }
          expect(await send(view.messages)).toEqual({ status: 200, error: undefined });
        }),
        { numRuns: 300 },
      );
    });
  });
});
