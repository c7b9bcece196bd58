import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { slackPrincipal, type Caller } from "../../lib/auth/principal.js";
import { buildModelView } from "../../lib/model-view/build-model-view.js";
import { ledgerAfterTurn, ledgerText } from "../../lib/model-view/parameter-ledger.js";
import { PROVENANCE_KEY, WITHHELD_ANCHOR } from "../../lib/model-view/provenance.js";
import { legacySource, withholdLedger, withholdMessages } from "../../lib/model-view/withheld-messages.js";

const analyst: Caller = { principal: slackPrincipal("T0ACME", "U0ANNA"), roles: ["analyst"] };
const viewer: Caller = { principal: slackPrincipal("T0ACME", "U0BEN"), roles: ["viewer"] };
const GATED = [{ tool: "sql_query", roles: ["analyst"] }];
const ROWS = "customer | region | discount\nCobalt Ridge Hospitals | West | 582957";
const SQL = "SELECT customer FROM sales WHERE month = '2026-10'";

/** Analyst A's finished turn: a gated query whose output A's answer does not repeat. */
function analystTurn(): BaseMessage[] {
  return [
    new HumanMessage({ content: "which customers drove the discounts?", id: "q1" }),
    new AIMessage({ content: "", id: "a1", tool_calls: [{ id: "c1", name: "sql_query", args: { sql: SQL } }] }),
    new ToolMessage({
      content: ROWS,
      tool_call_id: "c1",
      name: "sql_query",
      id: "t1",
      additional_kwargs: { [PROVENANCE_KEY]: GATED },
      artifact: { handle: "art_0123456789abcdef01234567", bytes: 60, tokens: 20, preview: ROWS, inline: true },
    }),
    new AIMessage({ content: "Three West customers.", id: "a2" }),
  ];
}

const everyone = legacySource(new Set(["sql_query", "search_conversation"]));
const text = (messages: readonly BaseMessage[]) => JSON.stringify(messages.map((m) => [m.content, (m as AIMessage).tool_calls ?? null]));

describe("withholdMessages", () => {
  it("returns the same messages for a caller who may see every output", () => {
    const messages = analystTurn();
    const seen = withholdMessages(messages, analyst, everyone);
    expect(seen.messages).toEqual(messages);
    seen.messages.forEach((m, i) => expect(m).toBe(messages[i]));
    expect(seen).toMatchObject({ withheld: 0, sources: GATED });
  });

  it("returns a notice for an output the caller may not see, its call's arguments withheld and no artifact handle", () => {
    const seen = withholdMessages(analystTurn(), viewer, everyone);
    expect(seen.withheld).toBe(1);
    expect(text(seen.messages)).not.toContain("Cobalt Ridge Hospitals");
    expect(text(seen.messages)).not.toContain("2026-10");
    expect(text(seen.messages)).not.toContain("art_0123456789abcdef01234567");
    const tool = seen.messages[2] as ToolMessage;
    expect(tool).toMatchObject({ tool_call_id: "c1", status: "error", id: "t1" });
    expect(tool.content).toContain("[Withheld: what sql_query was asked and returned is hidden from you because it needs the role analyst");
    expect((seen.messages[1] as AIMessage).tool_calls?.[0].args).toEqual({ withheld: true, period: true });
  });

  it("keeps the question and the posted answer, which were posted in the thread", () => {
    const seen = withholdMessages(analystTurn(), viewer, everyone);
    expect(seen.messages[0].content).toBe("which customers drove the discounts?");
    expect(seen.messages[3].content).toBe("Three West customers.");
  });

  it("judges an output stored without provenance by its tool's rules now: withheld when the caller is not offered the tool", () => {
    const legacy = analystTurn().map((m) => (m.type === "tool" ? new ToolMessage({ content: ROWS, tool_call_id: "c1", name: "sql_query" }) : m));
    expect(withholdMessages(legacy, viewer, legacySource(new Set(["search_conversation"]))).withheld).toBe(1);
    expect(withholdMessages(legacy, viewer, everyone).withheld).toBe(0);
  });

  it("gives a view built from it that carries none of the rows, and a digest saying output is withheld", () => {
    const messages = [...analystTurn(), new HumanMessage({ content: "what did the analysis find?", id: "q2" })];
    const policy = {
      systemPrompt: "You help.",
      finishedTurns: 4,
      toolOutputTokens: 2_000,
      totalBudget: 10_000,
      turnDigest: { recentTurns: 1, outputTokens: 200, argsChars: 200 },
    };
    const view = buildModelView(withholdMessages(messages, viewer, everyone).messages, policy);
    const sent = view.messages.map((m) => String(m.content)).join("\n");
    expect(sent).not.toContain("Cobalt Ridge Hospitals");
    expect(sent).toContain("[Withheld:");
    expect(
      buildModelView(messages, policy)
        .messages.map((m) => String(m.content))
        .join("\n"),
    ).toContain("Cobalt Ridge Hospitals");
  });
});

describe("withholdLedger", () => {
  const policy = { entries: 3, tokens: 200 };

  it("returns a withheld line for an archived anchor the caller may not see, as the in-thread fold of withheld messages gives", () => {
    const archived = ledgerAfterTurn([], 1, analystTurn(), policy);
    expect(archived).toEqual([{ turn: 1, filter: "month = '2026-10'", provenance: GATED }]);
    const inThread = ledgerAfterTurn([], 1, withholdMessages(analystTurn(), viewer, everyone).messages, policy);
    expect(withholdLedger(archived, viewer)).toEqual(inThread);
    expect(ledgerText(inThread)).toContain(WITHHELD_ANCHOR);
    expect(ledgerText(inThread)).not.toContain("2026-10");
  });

  it("returns the ledger unchanged for a caller who may see it, and for entries stored without provenance", () => {
    const archived = ledgerAfterTurn([], 1, analystTurn(), policy);
    expect(withholdLedger(archived, analyst)).toEqual(archived);
    expect(withholdLedger([{ turn: 1, filter: "month = '2026-09'" }], viewer)).toEqual([{ turn: 1, filter: "month = '2026-09'" }]);
  });
});
