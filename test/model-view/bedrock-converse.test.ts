import { ChatBedrockConverse } from "@langchain/aws";
import type { BaseMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import fc from "fast-check";
import { z } from "zod";
import { ContextBudgetExceededError } from "../../lib/errors.js";
import { buildModelView, withCachePoints, type ModelView } from "../../lib/model-view/index.js";
import { startConverseEndpoint, type ConverseEndpoint } from "../support/converse-endpoint.js";
import { answer, calls, policy, result, rows, user } from "./histories.js";
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

/** The view as the graph sends it: with its cache points. */
function sent(view: ModelView): BaseMessage[] {
  return withCachePoints(view.messages, view.stats.cachePoints);
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
      const state = [
        user("q1"),
        calls([
          ["c1", "sql_query"],
          ["c2", "sql_query"],
        ]),
        result("c1", "north,1200"),
        user("q2"),
      ];
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
          expect(await send(sent(view))).toEqual({ status: 200, error: undefined });
        }),
        { numRuns: 300 },
      );
    });

    it("returns cache points that arrive on the wire where the view placed them, and are read back by the next call", async () => {
      const turn = (n: number) => [user(`q${n} ${rows(700)}`), calls([[`t${n}`, "sql_query"]]), result(`t${n}`, "north,1"), answer(`a${n} ${rows(700)}`)];
      const cached = policy({ finishedTurns: 2, historyBlockTurns: 2, cache: { minTokensPerCheckpoint: 1_024, stableTtl: "1h", turnTtl: "5m" } });
      const first = [...turn(1), ...turn(2), user(`q3 ${rows(1_200)}`)];
      const view = buildModelView(first, cached);
      expect(view.stats.cachePoints.map((p) => [p.kind, p.after, p.ttl])).toEqual([
        ["history", 4, "1h"],
        ["end", 5, "5m"],
      ]);
      const before = endpoint.requests.length;
      await chat().invoke(sent(view));
      const body = endpoint.requests[before].body!;
      // The system prompt is message 0 of the view and goes to `system`: message i of the view is messages[i - 1].
      expect(body.messages[3].content).toEqual([{ text: `a2 ${rows(700)}` }, { cachePoint: { type: "default", ttl: "1h" } }]);
      expect(body.messages[4].content).toEqual([{ text: `q3 ${rows(1_200)}` }, { cachePoint: { type: "default" } }]);
      expect(body.messages.flatMap((m) => m.content).filter((b) => "cachePoint" in b)).toHaveLength(2);

      const next = buildModelView([...first, calls([["c1", "sql_query"]]), result("c1", rows(1_100))], cached);
      expect(next.stats.cachePoints.map((p) => [p.kind, p.after])).toEqual([
        ["history", 4],
        ["previous", 5],
        ["end", 7],
      ]);
      const response = await chat().invoke(sent(next));
      expect(endpoint.requests.at(-1)!.cache?.cacheReadInputTokens).toBeGreaterThan(0);
      expect(response.usage_metadata?.input_token_details?.cache_read).toBe(endpoint.requests.at(-1)!.cache!.cacheReadInputTokens);
      expect(endpoint.requests.at(-1)!.body!.messages[6].content.at(-1)).toEqual({ cachePoint: { type: "default" } });
    });
  });
});
