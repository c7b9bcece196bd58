import { type AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalChatModel } from "../../lib/agent/local-chat-model.js";
import { loadToolsConfig } from "../../lib/config/tools-config.js";
import type { IdempotencyDocument } from "../../lib/store/idempotency-persistence-layer.js";
import { createDefaultTools, type DefaultTools } from "../../lib/tools/create-default-tools.js";
import type { FollowUpDocument } from "../../lib/tools/follow-up/create-follow-up-tool.js";
import { ToolIdempotencyGuard } from "../../lib/tools/tool-idempotency-guard.js";
import { ToolRegistry } from "../../lib/tools/tool-registry.js";
import { openTestDatabase, type TestDatabase } from "../support/mongo.js";
import { apiPrincipal } from "../../lib/auth/principal.js";

/** The README's example questions, verbatim: each must reach its tool through the offline model. */
const README_EXAMPLES: { question: string; tool: string; expect: RegExp }[] = [
  {
    question: `Why did margin fall last month? sql_query {"sql": "SELECT month, round(100.0*sum(gross_profit)/sum(revenue),1) AS margin_pct, round(100.0*sum(discount_amount)/sum(revenue+discount_amount),1) AS discount_pct FROM sales WHERE month >= '2026-08' GROUP BY month"}`,
    tool: "sql_query",
    expect: /2026-09 \| 33\.5 \| 6\n2026-10 \| 27\.7 \| 9\.8/,
  },
  {
    question: `Which customers drove it? sql_query {"sql": "SELECT customer, region, round(sum(discount_amount)) AS discount, round(100.0*sum(gross_profit)/sum(revenue),1) AS margin_pct FROM sales WHERE month = '2026-10' GROUP BY customer, region ORDER BY discount DESC LIMIT 5"}`,
    tool: "sql_query",
    expect: /Cobalt Ridge Hospitals \| West \| 582957 \| -7\.4/,
  },
  {
    question: `Did a cost change play a part? sql_query {"sql": "SELECT category, month, round(100.0*sum(gross_profit)/sum(revenue),1) AS margin_pct FROM sales WHERE month IN ('2026-09','2026-10') AND customer NOT IN ('Helios Freight Group','Cobalt Ridge Hospitals','Juniper Street Markets') GROUP BY category, month ORDER BY category, month"}`,
    tool: "sql_query",
    expect: /Networking \| 2026-09 \| 27\.7\nNetworking \| 2026-10 \| 19\.4/,
  },
  {
    question: `What does the October report say? search_documents {"query": "October 2026 margin drop"}`,
    tool: "search_documents",
    expect: /source: report-2026-10\.md/,
  },
  {
    question: `Who must approve a 30% discount? search_documents {"query": "discount approval above 15%"}`,
    tool: "search_documents",
    expect: /VP of Sales/,
  },
  {
    question: `How is gross margin defined? search_documents {"query": "gross margin definition"}`,
    tool: "search_documents",
    expect: /source: metric-gross-margin\.md/,
  },
  {
    question: `create_follow_up {"title": "Explain the October West volume deals above 15% discount", "owner": "Daniel Okafor", "dueDate": "2026-11-15"}`,
    tool: "create_follow_up",
    expect: /follow-up FU-[0-9A-F]{8}: "Explain the October West volume deals above 15% discount", owner Daniel Okafor, due 2026-11-15/,
  },
  {
    question: `Try a write: sql_query {"sql": "DELETE FROM orders"}`,
    tool: "sql_query",
    expect: /^Error: sql_query: query refused: only SELECT queries/,
  },
];

describe("README examples with the offline model", () => {
  let t: TestDatabase;
  let defaults: DefaultTools;
  let registry: ToolRegistry;
  const caller = { principal: apiPrincipal("readme"), roles: [] };

  beforeAll(async () => {
    t = await openTestDatabase("readme");
    defaults = createDefaultTools(loadToolsConfig({}), {
      followUps: t.db.collection<FollowUpDocument>("follow_ups"),
      secrets: { get: async () => undefined },
    });
    registry = new ToolRegistry(defaults.tools, {
      guard: new ToolIdempotencyGuard({ collection: t.db.collection<IdempotencyDocument>("idempotency") }),
    });
  });
  afterAll(async () => {
    await defaults.close();
    await t.db.collection("follow_ups").deleteMany({});
    await t.db.collection("idempotency").deleteMany({});
    await t.client.close();
  });

  it.each(README_EXAMPLES)("returns the expected tool result for: $question", async (example) => {
    const model = new LocalChatModel().bindTools(registry.toolSpecs(caller));
    const human = new HumanMessage(example.question);
    const ai = (await model.invoke([human])) as AIMessage;
    const call = ai.tool_calls?.[0];
    expect(call?.name).toBe(example.tool);
    const result = await registry.execute({ id: call!.id!, name: call!.name, args: call!.args }, { conversationId: "readme", turnId: "t", caller });
    expect(result.content).toMatch(example.expect);
    const answer = await model.invoke([human, ai, new ToolMessage({ tool_call_id: call!.id!, name: call!.name, content: result.content, status: result.status })]);
    expect(String(answer.content).length).toBeGreaterThan(0);
  });
});
