import { readFile } from "node:fs/promises";
import { type AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalChatModel } from "../../lib/agent/local-chat-model.js";
import { loadToolsConfig } from "../../lib/config/tools-config.js";
import type { IdempotencyDocument } from "../../lib/store/idempotency-persistence-layer.js";
import { createDefaultTools, type DefaultTools } from "../../lib/tools/create-default-tools.js";
import type { FollowUpDocument } from "../../lib/tools/follow-up/create-follow-up-tool.js";
import { ToolIdempotencyGuard } from "../../lib/tools/tool-idempotency-guard.js";
import { ToolRegistry } from "../../lib/tools/tool-registry.js";
import { useTestDatabase } from "../support/store-fixture.js";
import { apiPrincipal } from "../../lib/auth/principal.js";
import { SAMPLE_QUESTIONS } from "../../lib/tools/sample-questions.js";

/** What each sample question's tool answers from the sample data; a sample question without an entry here fails the suite. */
const EXPECTED: Record<string, RegExp> = {
  [SAMPLE_QUESTIONS.sql_query[0]]: /2026-09 \| 33\.5 \| 6\n2026-10 \| 27\.7 \| 9\.8/,
  [SAMPLE_QUESTIONS.sql_query[1]]: /Cobalt Ridge Hospitals \| West \| 582957 \| -7\.4/,
  [SAMPLE_QUESTIONS.sql_query[2]]: /Networking \| 2026-09 \| 27\.7\nNetworking \| 2026-10 \| 19\.4/,
  [SAMPLE_QUESTIONS.search_documents[0]]: /source: report-2026-10\.md/,
  [SAMPLE_QUESTIONS.search_documents[1]]: /VP of Sales/,
  [SAMPLE_QUESTIONS.search_documents[2]]: /source: metric-gross-margin\.md/,
  [SAMPLE_QUESTIONS.create_follow_up[0]]:
    /follow-up FU-[0-9A-F]{8}: "Explain the October West volume deals above 15% discount", owner Daniel Okafor, due 2026-11-15/,
  [SAMPLE_QUESTIONS.sql_query[3]]: /^Error: sql_query: query refused: only SELECT or VALUES queries/,
};

const SAMPLES = Object.entries(SAMPLE_QUESTIONS).flatMap(([tool, questions]) => questions.map((question) => ({ tool, question })));

describe("SAMPLE_QUESTIONS with the offline model", () => {
  const t = useTestDatabase("readme", { clearBeforeEach: false });
  let defaults: DefaultTools;
  let registry: ToolRegistry;
  const caller = { principal: apiPrincipal("readme"), roles: [] };

  beforeAll(async () => {
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
  });

  it.each(SAMPLES)("returns the expected tool result for: $question", async (example) => {
    expect(EXPECTED[example.question]).toBeInstanceOf(RegExp);
    const model = new LocalChatModel().bindTools(registry.toolSpecs(caller));
    const human = new HumanMessage(example.question);
    const ai = (await model.invoke([human])) as AIMessage;
    const call = ai.tool_calls?.[0];
    expect(call?.name).toBe(example.tool);
    const result = await registry.execute({ id: call!.id!, name: call!.name, args: call!.args }, { conversationId: "readme", turnId: "t", caller });
    expect(result.content).toMatch(EXPECTED[example.question]);
    const answer = await model.invoke([
      human,
      ai,
      new ToolMessage({ tool_call_id: call!.id!, name: call!.name, content: result.content, status: result.status }),
    ]);
    expect(String(answer.content).length).toBeGreaterThan(0);
  });

  it("returns each sample question as docs/tools.md lists it", async () => {
    const readme = await readFile(new URL("../../docs/tools.md", import.meta.url), "utf8");
    expect(SAMPLES.filter(({ question }) => !readme.includes(question))).toEqual([]);
  });
});
