import { describe, expect, it } from "vitest";
import { loadConfig } from "../../lib/config/config.js";
import { type BannerFacts, modelFacts, startupBanner } from "../../lib/local/startup-banner.js";

function facts(env: Record<string, string> = {}, overrides: Partial<BannerFacts> = {}): BannerFacts {
  const config = loadConfig(env);
  return {
    url: "http://127.0.0.1:3000",
    mongodbUri: "mongodb://127.0.0.1:40000/?directConnection=true",
    embedded: true,
    provider: config.model.provider,
    tools: ["sql_query", "create_follow_up", "search_conversation"],
    toolRoles: config.tools.roles,
    approvals: config.tools.approvals,
    recall: config.recall,
    channels: { slack: false, teams: false },
    ...overrides,
  };
}

describe("startupBanner", () => {
  it("returns the tools, approvals off with the line that turns them on, lexical recall, and that embedded data is in memory", () => {
    const lines = startupBanner(facts());
    expect(lines).toContain("tools sql_query, create_follow_up, search_conversation");
    expect(lines).toContain(`approvals off: no tool call waits (TOOL_APPROVALS='{"create_follow_up":{"require":"always"}}' npm start turns them on)`);
    expect(lines).toContain("recall search_conversation: lexical (set RECALL_EMBEDDINGS_MODEL_ID for embeddings too)");
    expect(lines.find((line) => line.startsWith("mongodb "))).toMatch(/in memory: conversations are lost when it stops; set MONGODB_URI to keep them\)$/);
  });

  it("returns approvals on with the tools that wait and for how long, and the tools limited by role", () => {
    const env = { TOOL_APPROVALS: '{"create_follow_up":{"require":"always"}}', APPROVAL_TTL_SECONDS: "3600", TOOL_ROLES: '{"sql_query":["analyst"]}' };
    const lines = startupBanner(facts(env));
    expect(lines).toContain("approvals on: create_follow_up (always) wait for a person, at most 1 h");
    expect(lines).toContain("tools sql_query, create_follow_up, search_conversation (by role: sql_query)");
  });

  it("returns a real MongoDB without the in-memory note and without its password, and embeddings recall by model", () => {
    const lines = startupBanner(
      facts({ RECALL_EMBEDDINGS_MODEL_ID: "amazon.titan-embed-text-v2:0" }, { embedded: false, mongodbUri: "mongodb://ada:s3cret@db.example:27017/x" }),
    );
    expect(lines).toContain("mongodb mongodb://…@db.example:27017/x");
    expect(lines).toContain("recall search_conversation: lexical and embeddings (amazon.titan-embed-text-v2:0)");
    expect(lines.join("\n")).not.toContain("s3cret");
  });

  it("returns the OpenAI-compatible model and its base URL without the URL's credentials or query", () => {
    const config = loadConfig({
      MODEL_PROVIDER: "openai-compatible",
      OPENAI_BASE_URL: "http://ada:s3cret@127.0.0.1:11434/v1?key=sk-hidden",
      OPENAI_MODEL: "qwen3:8b",
    });
    const lines = startupBanner(facts({}, modelFacts(config.model)));
    expect(lines).toContain("model provider openai-compatible: qwen3:8b at http://127.0.0.1:11434/v1");
    expect(lines.join("\n")).not.toMatch(/s3cret|sk-hidden/);
  });

  it("returns Bedrock's model id, and the offline model without one", () => {
    expect(startupBanner(facts({}, modelFacts(loadConfig({ MODEL_PROVIDER: "bedrock", BEDROCK_MODEL_ID: "eu.anthropic.claude-x" }).model)))).toContain(
      "model provider bedrock: eu.anthropic.claude-x",
    );
    expect(startupBanner(facts({}, modelFacts(loadConfig({}).model)))).toContain(`model provider ${loadConfig({}).model.provider}`);
  });
});
