import { describe, expect, it } from "vitest";
import { AIMessage, HumanMessage, SystemMessage, ToolMessage } from "@langchain/core/messages";
import { buildModelView } from "../../lib/model-view/build-model-view.js";
import { messageText } from "../../lib/model-view/message-text.js";
import {
  callsSeenBy,
  compactDispositions,
  expandDispositions,
  messagesSeenBy,
  summarizeContext,
  toViewMessages,
  ZERO_USAGE,
  type ModelCallRecord,
} from "../../lib/store/turn-record.js";
import { slackPrincipal } from "../../lib/auth/principal.js";

const policy = { systemPrompt: "sys", finishedTurns: 4, toolOutputTokens: 1_000, totalBudget: 10_000 };

function callWith(index: number, messages: (HumanMessage | AIMessage)[]): ModelCallRecord {
  const view = buildModelView(messages, policy);
  return {
    turnId: "t",
    index,
    startedAt: new Date(0),
    durationMs: 1,
    view: toViewMessages(view.messages),
    stats: view.stats,
    usage: ZERO_USAGE,
    toolCalls: [],
  };
}

describe("turn-record", () => {
  describe("toViewMessages", () => {
    it("returns each message's role and text, tool calls and tool results linked by id", () => {
      const view = toViewMessages([
        new SystemMessage("sys"),
        new HumanMessage("q"),
        new AIMessage({ content: "", tool_calls: [{ id: "c1", name: "lookup", args: { x: 1 } }] }),
        new ToolMessage({ content: "out", tool_call_id: "c1", name: "lookup" }),
      ]);
      expect(view.map(({ tokens, ...rest }) => rest)).toEqual([
        { role: "system", content: "sys" },
        { role: "user", content: "q" },
        { role: "assistant", content: "", toolCalls: [{ id: "c1", name: "lookup", args: { x: 1 } }] },
        { role: "tool", content: "out", toolCallId: "c1", toolName: "lookup" },
      ]);
      expect(view.every((m) => m.tokens > 0)).toBe(true);
    });

    it("returns an answer of several text blocks as the stored answer is made (messageText), so the two records agree", () => {
      const answer = new AIMessage({
        content: [
          { type: "text", text: "Looking." },
          { type: "text", text: " " },
          { type: "text", text: "Found it." },
        ],
      });
      const [recorded] = toViewMessages([answer]);
      expect(recorded.content).toBe(messageText(answer.content));
      expect(recorded.content).toBe("Looking.\nFound it.");
    });
  });

  describe("summarizeContext", () => {
    it("returns zeros for a turn without model calls", () => {
      expect(summarizeContext([])).toEqual({ modelCalls: 0, stateTokens: 0, viewTokens: 0, budget: 0, finishedTurnsKept: 0, omittedOutputs: 0 });
    });

    it("returns the last call's view figures and the number of calls", () => {
      const first = callWith(0, [new HumanMessage("q")]);
      const last = callWith(1, [new HumanMessage("q"), new AIMessage("a"), new HumanMessage("q2")]);
      const summary = summarizeContext([first, last]);
      expect(summary.modelCalls).toBe(2);
      expect(summary.viewTokens).toBe(last.stats.viewTokens);
      expect(summary.stateTokens).toBe(last.stats.stateTokens);
      expect(summary.finishedTurnsKept).toBe(1);
      expect(summary.budget).toBe(last.stats.budget);
    });
  });

  describe("compactDispositions", () => {
    const thread = () => {
      const messages: (HumanMessage | AIMessage | ToolMessage)[] = [];
      for (let t = 0; t < 12; t++) {
        messages.push(new HumanMessage(`q${t}`), new AIMessage({ content: "", tool_calls: [{ id: `c${t}`, name: "sql", args: {}, type: "tool_call" }] }));
        messages.push(new ToolMessage({ content: "rows", tool_call_id: `c${t}`, name: "sql" }), new AIMessage(`a${t}`));
      }
      messages.push(new HumanMessage("the active question"));
      return messages;
    };

    it("returns one entry per turn out of the window and per finished turn's tool exchange, not one per message", () => {
      const { dispositions } = buildModelView(thread(), policy);
      const runs = compactDispositions(dispositions);
      // 8 turns out of the window (one run each), 4 kept turns (question, exchange, answer), the active question.
      expect(dispositions).toHaveLength(49);
      expect(runs).toHaveLength(8 + 4 * 3 + 1);
    });

    it("returns what expandDispositions turns back into the dispositions, one per stored message", () => {
      const { dispositions } = buildModelView(thread(), policy);
      expect(expandDispositions(compactDispositions(dispositions))).toEqual(dispositions);
      expect(expandDispositions(dispositions)).toEqual(dispositions);
    });
  });
});

describe("callsSeenBy", () => {
  const anna = slackPrincipal("T0ACME", "U0ANNA");
  const ben = { principal: slackPrincipal("T0ACME", "U0BEN"), roles: ["viewer"] };
  const call = (sources?: ModelCallRecord["sources"]): ModelCallRecord => ({
    turnId: "t1",
    index: 0,
    startedAt: new Date(0),
    durationMs: 1,
    view: [{ role: "tool", content: "Cobalt Ridge Hospitals | West", toolCallId: "c1", toolName: "sql_query" }],
    stats: {} as ModelCallRecord["stats"],
    dispositions: [{ fate: "sent", viewIndex: 0 }],
    usage: ZERO_USAGE,
    toolCalls: ["sql_query"],
    ...(sources && { sources }),
  });

  it("returns a notice instead of the view and dispositions of a call that drew on data the viewer may not see", () => {
    const [seen] = callsSeenBy([call([{ tool: "sql_query", roles: ["analyst"] }])], ben, anna);
    expect(JSON.stringify(seen)).not.toContain("Cobalt Ridge Hospitals");
    expect(seen.view).toEqual([{ role: "system", content: expect.stringContaining("needs the role analyst") }]);
    expect(seen.dispositions).toBeUndefined();
    expect(seen.toolCalls).toEqual(["sql_query"]);
  });

  it("returns the call unchanged for a viewer who may see its sources", () => {
    const recorded = call([{ tool: "sql_query", roles: ["analyst"] }]);
    expect(callsSeenBy([recorded], { ...ben, roles: ["analyst"] }, anna)).toEqual([recorded]);
  });

  it("returns a call recorded without sources only to the turn's asker", () => {
    expect(callsSeenBy([call()], { principal: anna, roles: [] }, anna)[0].view[0].content).toContain("Cobalt");
    expect(callsSeenBy([call()], ben, anna)[0].view[0].content).toContain("[Withheld:");
  });
});

describe("messagesSeenBy", () => {
  const ben = { principal: slackPrincipal("T0ACME", "U0BEN"), roles: ["viewer"] };
  const stored = [
    { role: "user" as const, content: "which customers?" },
    { role: "assistant" as const, content: "", toolCalls: [{ id: "c1", name: "sql_query", args: { sql: "SELECT … WHERE month = '2026-10'" } }] },
    {
      role: "tool" as const,
      content: "Cobalt Ridge Hospitals | West",
      toolCallId: "c1",
      toolName: "sql_query",
      provenance: [{ tool: "sql_query", roles: ["analyst"] }],
      artifact: { handle: "art_x" },
    },
    { role: "assistant" as const, content: "Three West customers." },
  ];

  it("returns a notice for an output the reader may not see, without its artifact, and the call's arguments withheld", () => {
    const seen = messagesSeenBy(stored, ben);
    expect(JSON.stringify(seen)).not.toContain("Cobalt Ridge Hospitals");
    expect(JSON.stringify(seen)).not.toContain("2026-10");
    expect(JSON.stringify(seen)).not.toContain("art_x");
    expect(seen[2].content).toContain("[Withheld:");
    expect(seen[3].content).toBe("Three West customers.");
  });

  it("returns the messages unchanged for a reader who may see them", () => {
    expect(messagesSeenBy(stored, { ...ben, roles: ["analyst"] })).toEqual(stored);
  });
});
