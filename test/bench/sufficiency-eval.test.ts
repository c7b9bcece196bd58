import { BedrockRuntimeClient } from "@aws-sdk/client-bedrock-runtime";
import { ChatBedrockConverse } from "@langchain/aws";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { DEFAULT_VIEW_FINISHED_TURNS, DEFAULT_VIEW_HISTORY_BLOCK_TURNS } from "../../lib/config/view-config.js";
import { ConversationSearch } from "../../lib/recall/conversation-search.js";
import { createSearchConversationTool } from "../../lib/recall/search-conversation-tool.js";
import { ThreadwiseDatabase } from "../../lib/store/database.js";
import { createReadToolOutputTool } from "../../lib/tools/read-tool-output.js";
import { ToolRegistry } from "../../lib/tools/tool-registry.js";
import { checkCredentials, EvalNotRunnableError, evaluateCase, usedTerms } from "../../bench/sufficiency/eval.js";
import { loadCase, loadSuite, MemoryRecallIndex, type LoadedCase } from "../../bench/sufficiency/suite.js";
import { startConverseEndpoint, type ConverseEndpoint, type Responder } from "../support/converse-endpoint.js";
import { openTestDatabase, type TestDatabase } from "../support/mongo.js";

const MODEL_ID = "us.anthropic.claude-sonnet-4-20250514-v1:0";
let endpoint: ConverseEndpoint;
let database: TestDatabase;
let registry: ToolRegistry;
let entityCase: LoadedCase;
let farCase: LoadedCase;

beforeAll(async () => {
  endpoint = await startConverseEndpoint();
  for (const [name, value] of Object.entries(endpoint.environment)) vi.stubEnv(name, value);
  database = await openTestDatabase("sufficiency_eval");
  const stores = new ThreadwiseDatabase(database.client, { dbName: database.dbName });
  await stores.setup();
  const suite = await loadSuite();
  const recall = new MemoryRecallIndex();
  const byId = (id: string) => suite.cases.find((c) => c.id === id) as (typeof suite.cases)[number];
  entityCase = await loadCase(stores, byId("result-entity-001"), suite.fillers, recall);
  farCase = await loadCase(stores, byId("far-reference-001"), suite.fillers, recall);
  registry = new ToolRegistry([
    createSearchConversationTool({
      search: new ConversationSearch({ index: recall }),
      view: { finishedTurns: DEFAULT_VIEW_FINISHED_TURNS, historyBlockTurns: DEFAULT_VIEW_HISTORY_BLOCK_TURNS },
    }),
    createReadToolOutputTool(stores.artifacts),
  ]);
}, 60_000);

afterAll(async () => {
  vi.unstubAllEnvs();
  await endpoint.close();
  await database?.cleanup();
});

const model = () => new ChatBedrockConverse({ model: MODEL_ID, region: "us-east-1", temperature: 0, maxTokens: 256 });

describe("sufficiency eval", () => {
  describe("evaluateCase", () => {
    it("returns a case answered when the model's answer states every evidence unit", async () => {
      const [name, , revenue] = ["Juniper Street Markets", "", "493160.42"];
      endpoint.setResponder(() => ({ text: `The fourth one is ${name}, with ${revenue} in revenue.` }));
      const score = await evaluateCase(entityCase, { model: model(), registry });
      expect(score).toMatchObject({
        answered: true,
        steps: 1,
        units: [
          { id: "row-customer", used: true },
          { id: "row-revenue", used: true },
        ],
      });
    });

    it("returns a case not answered when the answer misses a unit, after running the tool calls the model made", async () => {
      let calls = 0;
      const respond: Responder = () =>
        ++calls === 1 ? { toolUses: [{ name: "search_conversation", input: { query: "customer spent" } }] } : { text: "I could not find that amount." };
      endpoint.setResponder(respond);
      const before = endpoint.requests.length;
      const score = await evaluateCase(farCase, { model: model(), registry });
      expect(score).toMatchObject({ answered: false, steps: 2, toolCalls: ["search_conversation"] });
      // The second request carried the real search's result back to the model.
      const second = endpoint.requests[before + 1].body;
      const last = second?.messages[second.messages.length - 1];
      expect(JSON.stringify(last?.content)).toContain("earlier turn");
    });
  });

  describe("usedTerms", () => {
    it("returns a query parameter by its value", () => {
      expect(usedTerms({ id: "s", source: "parameters", turn: 0, text: "segment = 'SMB'" })).toEqual(["SMB"]);
    });
  });

  describe("checkCredentials", () => {
    it("throws EvalNotRunnableError when the default chain finds no credentials", async () => {
      const client = new BedrockRuntimeClient({
        region: "us-east-1",
        credentials: async () => {
          throw new Error("no credentials");
        },
      });
      await expect(checkCredentials(client)).rejects.toBeInstanceOf(EvalNotRunnableError);
    });
  });
});
