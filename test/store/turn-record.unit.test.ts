import { describe, expect, it } from "vitest";
import { AIMessage, HumanMessage, SystemMessage, ToolMessage } from "@langchain/core/messages";
import { buildModelView } from "../../lib/model-view/build-model-view.js";
import { messageText } from "../../lib/model-view/message-text.js";
import { compactDispositions, expandDispositions, summarizeContext, toViewMessages, ZERO_USAGE, type ModelCallRecord } from "../../lib/store/turn-record.js";

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
