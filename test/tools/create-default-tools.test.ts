import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadToolsConfig, TOOL_NAMES } from "../../lib/config/tools-config.js";
import { READ_TOOL_OUTPUT_NAME } from "../../lib/tools/read-tool-output.js";
import type { IdempotencyDocument } from "../../lib/store/idempotency-persistence-layer.js";
import { createDefaultTools, type DefaultTools } from "../../lib/tools/create-default-tools.js";
import type { FollowUpDocument } from "../../lib/tools/follow-up/create-follow-up-tool.js";
import { ToolIdempotencyGuard } from "../../lib/tools/tool-idempotency-guard.js";
import { ToolRegistry } from "../../lib/tools/tool-registry.js";
import { SAMPLE_QUESTIONS } from "../../lib/tools/sample-questions.js";
import { useTestDatabase } from "../support/store-fixture.js";
import { apiPrincipal } from "../../lib/auth/principal.js";

const analyst = { principal: apiPrincipal("ana"), roles: ["analyst"] };
const viewer = { principal: apiPrincipal("vic"), roles: ["viewer"] };

describe("createDefaultTools", () => {
  const t = useTestDatabase("defaulttools", { clearBeforeEach: false });
  let local: DefaultTools;
  let registry: ToolRegistry;

  beforeAll(async () => {
    const config = loadToolsConfig({ TOOL_ROLES: '{"create_follow_up": ["analyst"]}' });
    local = createDefaultTools(config, {
      followUps: t.db.collection<FollowUpDocument>("follow_ups"),
      secrets: { get: async () => undefined },
    });
    registry = new ToolRegistry(local.tools, {
      roles: config.roles,
      guard: new ToolIdempotencyGuard({ collection: t.db.collection<IdempotencyDocument>("idempotency") }),
    });
  });
  afterAll(async () => {
    await local.close();
  });

  it("returns the local tools, without Power BI when it is not configured", () => {
    expect(local.tools.map((tool) => tool.name)).toEqual(["sql_query", "search_documents", "create_follow_up"]);
  });

  it("returns neither sql_query nor search_documents when both engines are none", async () => {
    const config = loadToolsConfig({ SQL_ENGINE: "none", DOCUMENTS_ENGINE: "none" });
    const bare = createDefaultTools(config, { followUps: t.db.collection<FollowUpDocument>("follow_ups"), secrets: { get: async () => undefined } });
    expect(bare.tools.map((tool) => tool.name)).toEqual(["create_follow_up"]);
    await bare.close();
  });

  it("returns query_semantic_model when Power BI is configured", async () => {
    const config = loadToolsConfig({ POWERBI_TENANT_ID: "t", POWERBI_GROUP_ID: "g", POWERBI_DATASET_ID: "d" });
    const withPowerBi = createDefaultTools(config, {
      followUps: t.db.collection<FollowUpDocument>("follow_ups"),
      secrets: { get: async () => undefined },
    });
    expect(withPowerBi.tools.map((tool) => tool.name)).toContain("query_semantic_model");
    await withPowerBi.close();
  });

  it("returns tools whose names, with read_tool_output, are exactly the names TOOL_ROLES accepts", async () => {
    const config = loadToolsConfig({ POWERBI_TENANT_ID: "t", POWERBI_GROUP_ID: "g", POWERBI_DATASET_ID: "d" });
    const every = createDefaultTools(config, { followUps: t.db.collection<FollowUpDocument>("follow_ups"), secrets: { get: async () => undefined } });
    expect([...every.tools.map((tool) => tool.name), READ_TOOL_OUTPUT_NAME].sort()).toEqual([...TOOL_NAMES].sort());
    await every.close();
  });

  it("returns Athena and Bedrock KB tools in AWS mode, named for their dialect", async () => {
    const config = loadToolsConfig({
      SQL_ENGINE: "athena",
      ATHENA_WORKGROUP: "wg",
      ATHENA_DATABASE: "sales",
      DOCUMENTS_ENGINE: "bedrock-kb",
      BEDROCK_KB_ID: "KB123",
      AWS_REGION: "eu-west-1",
    });
    const aws = createDefaultTools(config, { followUps: t.db.collection<FollowUpDocument>("follow_ups"), secrets: { get: async () => undefined } });
    expect(aws.tools.find((tool) => tool.name === "sql_query")?.description).toContain("Trino SQL (Amazon Athena)");
    await aws.close();
  });

  it("returns the sample questions on the tools that hold the sample data, and none on Athena or a knowledge base", async () => {
    const { sql_query, search_documents, create_follow_up } = SAMPLE_QUESTIONS;
    expect(local.tools.map((tool) => tool.examples)).toEqual([sql_query, search_documents, create_follow_up]);
    const config = loadToolsConfig({
      SQL_ENGINE: "athena",
      ATHENA_WORKGROUP: "wg",
      ATHENA_DATABASE: "sales",
      DOCUMENTS_ENGINE: "bedrock-kb",
      BEDROCK_KB_ID: "KB",
      AWS_REGION: "eu-west-1",
    });
    const aws = createDefaultTools(config, { followUps: t.db.collection<FollowUpDocument>("follow_ups"), secrets: { get: async () => undefined } });
    expect(aws.tools.map((tool) => [tool.name, tool.examples])).toEqual([
      ["sql_query", undefined],
      ["search_documents", undefined],
      ["create_follow_up", SAMPLE_QUESTIONS.create_follow_up],
    ]);
    await aws.close();
  });

  it("offers create_follow_up only to the roles configured for it", () => {
    expect(registry.available(analyst).map((tool) => tool.name)).toContain("create_follow_up");
    expect(registry.available(viewer).map((tool) => tool.name)).toEqual(["sql_query", "search_documents"]);
  });

  it("answers a margin question end to end through the registry", async () => {
    const result = await registry.execute(
      {
        id: "1",
        name: "sql_query",
        args: { sql: "SELECT month, round(100.0*sum(gross_profit)/sum(revenue),1) AS gm FROM sales WHERE month >= '2026-09' GROUP BY month" },
      },
      { conversationId: "c", turnId: "t", caller: viewer },
    );
    expect(result.content).toBe("2 rows (truncated: no)\nmonth | gm\n2026-09 | 33.5\n2026-10 | 27.7");
  });

  it("records a follow-up without posting when no webhook is configured", async () => {
    const result = await registry.execute(
      { id: "f1", name: "create_follow_up", args: { title: "Explain the West volume deals" } },
      { conversationId: "c", turnId: "t", caller: analyst },
    );
    expect(result.content).toMatch(/^Recorded follow-up FU-[0-9A-F]{8}.*No task webhook is configured/);
    expect(await t.db.collection("follow_ups").countDocuments({ _id: "c:f1" as never })).toBe(1);
  });
});
