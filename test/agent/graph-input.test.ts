import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { describe, expect, it } from "vitest";
import type { PendingCall } from "../../lib/agent/approval-gate.js";
import { graphInput, type GraphInput, type ThreadAtStart } from "../../lib/agent/graph-input.js";

const QUESTION = "t2:user";
const earlier = [new HumanMessage({ content: "first", id: "t1:user" }), new AIMessage({ content: "first answer", id: "t1:ai" })];
const asked = new HumanMessage({ content: "second", id: QUESTION });
const callingTool = new AIMessage({ content: "", id: "ai:call", tool_calls: [{ id: "call-1", name: "send_mail", args: { to: "bob" } }] });
const toolResult = new ToolMessage({ content: "sent", tool_call_id: "call-1", id: "tool-1" });
const answer = new AIMessage({ content: "done", id: "ai:done" });
const later = new HumanMessage({ content: "third", id: "t3:user" });
const pending: PendingCall = {
  approvalId: "a-1",
  toolCallId: "call-1",
  tool: "send_mail",
  args: { to: "bob" },
  approvers: { requester: false, roles: ["manager"] },
};

const thread = (messages: BaseMessage[], next: string[] = [], waiting: PendingCall[] = []): ThreadAtStart => ({ messages, next, waiting });

describe("graphInput", () => {
  // The five ways an attempt goes into the graph, and the thread that leads to each.
  const cases: [string, ThreadAtStart | undefined, GraphInput["kind"]][] = [
    ["a turn just begun, its thread not read", undefined, "ask"],
    ["a thread without the question", thread(earlier), "ask"],
    ["an empty thread", thread([]), "ask"],
    ["the question is the latest, the graph stopped before the model", thread([...earlier, asked], ["agent"]), "continue"],
    ["the question is the latest, the graph stopped after a tool", thread([...earlier, asked, callingTool, toolResult], ["agent"]), "continue"],
    ["the question is the latest and answered", thread([...earlier, asked, answer]), "answered"],
    ["the question is the latest, paused on its calls", thread([...earlier, asked, callingTool], ["tools"], [pending]), "decisions"],
    ["the question is in the thread, a later one after it", thread([...earlier, asked, answer, later]), "superseded"],
    ["an earlier turn paused on its calls, the question not in the thread", thread([...earlier, later, callingTool], ["tools"], [pending]), "ask"],
  ];

  it.each(cases)("decides for %s", (_name, at, kind) => {
    expect(graphInput(at, QUESTION).kind).toBe(kind);
  });

  it("returns the answer already in the thread, so the attempt records it without a model call", () => {
    expect(graphInput(thread([...earlier, asked, answer]), QUESTION)).toEqual({ kind: "answered", answer });
  });

  it("returns the waiting calls for the runner to read their decisions", () => {
    expect(graphInput(thread([...earlier, asked, callingTool], ["tools"], [pending]), QUESTION)).toEqual({ kind: "decisions", calls: [pending] });
  });

  it("answers an earlier turn's waiting calls as not run before a new question, so no call is left unanswered", () => {
    const decision = graphInput(thread([...earlier, later, callingTool], ["tools"], [pending]), QUESTION);
    if (decision.kind !== "ask") throw new Error(`expected ask, got ${decision.kind}`);
    expect(decision.unanswered.map((m) => [m.tool_call_id, m.name])).toEqual([["call-1", "send_mail"]]);
    expect(String(decision.unanswered[0].content)).toContain("a new question came first");
  });

  it("does not answer an answered turn's calls again: a thread that ends with an answer adds only the question", () => {
    expect(graphInput(thread([...earlier, later, callingTool, toolResult, answer]), QUESTION)).toEqual({ kind: "ask", unanswered: [] });
  });

  it("does not treat a final message with tool calls as an answer", () => {
    expect(graphInput(thread([...earlier, asked, callingTool]), QUESTION).kind).toBe("continue");
  });

  it("reads nothing and changes nothing of the thread it is given", () => {
    const messages = [...earlier, asked, callingTool];
    const at = thread(messages, ["tools"], [pending]);
    const copy = structuredClone({ ids: messages.map((m) => m.id), next: at.next, waiting: at.waiting });
    graphInput(at, QUESTION);
    expect({ ids: at.messages.map((m) => m.id), next: at.next, waiting: at.waiting }).toEqual(copy);
  });
});
