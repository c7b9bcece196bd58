import { describe, expect, it } from "vitest";
import { decisionsOf, ProtocolStreamEncoder, protocolMessage, questionOf, runStatusOf, streamModesOf, threadStatusOf } from "../../lib/api/agent-protocol.js";
import { ValidationError } from "../../lib/errors.js";
import type { ApprovalDocument } from "../../lib/store/approval-store.js";
import type { TurnDocument } from "../../lib/store/turn-store.js";

const approval = (id: string) => ({ _id: id, status: "pending" }) as ApprovalDocument;
const turn = (status: TurnDocument["status"]) => ({ status }) as TurnDocument;
const parse = (frame: string) => ({ event: /event: (.+)/.exec(frame)?.[1], data: JSON.parse(/data: (.+)/.exec(frame)?.[1] ?? "null") });

describe("agent-protocol", () => {
  describe("questionOf", () => {
    it("returns the text of one human message, in either dialect", () => {
      expect(questionOf({ messages: [{ type: "human", content: "hi" }] })).toBe("hi");
      expect(
        questionOf({
          messages: [
            {
              role: "user",
              content: [
                { type: "text", text: "a" },
                { type: "text", text: "b" },
              ],
            },
          ],
        }),
      ).toBe("a\nb");
    });

    it("throws when the input holds several messages or one that is not the user's", () => {
      expect(() =>
        questionOf({
          messages: [
            { type: "human", content: "a" },
            { type: "human", content: "b" },
          ],
        }),
      ).toThrow(ValidationError);
      expect(() => questionOf({ messages: [{ type: "ai", content: "a" }] })).toThrow(ValidationError);
    });
  });

  describe("streamModesOf", () => {
    it("returns values by default and the modes asked, once each", () => {
      expect(streamModesOf(undefined)).toEqual(["values"]);
      expect(streamModesOf(["updates", "updates", "custom"])).toEqual(["updates", "custom"]);
    });

    it("throws naming a mode it does not serve", () => {
      expect(() => streamModesOf(["values", "debug"])).toThrow(/debug/);
    });
  });

  describe("decisionsOf", () => {
    const pending = [approval("a1"), approval("a2")];

    it("returns one decision for every waiting call", () => {
      expect(decisionsOf("approve", pending)).toEqual([
        { approvalId: "a1", choice: { kind: "approve" } },
        { approvalId: "a2", choice: { kind: "approve" } },
      ]);
      expect(decisionsOf({ decision: "reject", reason: "no" }, pending)[1]).toEqual({ approvalId: "a2", choice: { kind: "reject", reason: "no" } });
    });

    it("returns decisions by approval id", () => {
      const decided = decisionsOf({ decisions: { a1: "reject", a2: { decision: "edit", args: { x: 1 } } } }, pending);
      expect(decided).toEqual([
        { approvalId: "a1", choice: { kind: "reject" } },
        { approvalId: "a2", choice: { kind: "edit", args: { x: 1 } } },
      ]);
    });

    it("throws when a decision is missing, unknown or ambiguous, or nothing waits", () => {
      expect(() => decisionsOf({ decisions: { a1: "approve" } }, pending)).toThrow(ValidationError);
      expect(() => decisionsOf({ decisions: { a1: "approve", a2: "approve", a3: "approve" } }, pending)).toThrow(ValidationError);
      expect(() => decisionsOf({ decision: "edit", args: {} }, pending)).toThrow(/names its call/);
      expect(() => decisionsOf("maybe", pending)).toThrow(ValidationError);
      expect(() => decisionsOf("approve", [])).toThrow(/nothing/);
    });
  });

  describe("statuses", () => {
    it("returns a run's status from its turn's and a thread's from its latest turn", () => {
      expect(
        ["queued", "running", "awaiting_approval", "completed", "failed", "superseded"].map((s) => runStatusOf(turn(s as TurnDocument["status"]))),
      ).toEqual(["pending", "running", "interrupted", "success", "error", "error"]);
      expect(threadStatusOf(null)).toBe("idle");
      expect(threadStatusOf(turn("running"))).toBe("busy");
      expect(threadStatusOf(turn("awaiting_approval"))).toBe("interrupted");
      expect(threadStatusOf(turn("failed"))).toBe("error");
      expect(threadStatusOf(turn("completed"))).toBe("idle");
    });
  });

  describe("protocolMessage", () => {
    it("returns LangChain message dicts with tool calls and results paired by id", () => {
      expect(protocolMessage({ role: "assistant", content: "", tokens: 1, toolCalls: [{ id: "c1", name: "t", args: {} }], id: "m1" }, 0)).toMatchObject({
        type: "ai",
        id: "m1",
        tool_calls: [{ id: "c1", name: "t", args: {}, type: "tool_call" }],
      });
      expect(protocolMessage({ role: "tool", content: "out", tokens: 1, toolCallId: "c1", toolName: "t" }, 3)).toMatchObject({
        type: "tool",
        id: "message-3",
        tool_call_id: "c1",
        name: "t",
      });
    });
  });

  describe("ProtocolStreamEncoder", () => {
    it("returns text deltas as message tuples and accumulated partials, tagged with the turn's event ids", () => {
      const encoder = new ProtocolStreamEncoder(["messages-tuple", "messages"], { runId: "r", threadId: "t" });
      const first = encoder.event({ id: 3, type: "text", modelCall: 0, delta: "Hel" }).map(parse);
      const second = encoder.event({ id: 4, type: "text", modelCall: 0, delta: "lo" }).map(parse);
      expect(first.map((f) => f.event)).toEqual(["messages", "messages/metadata", "messages/partial"]);
      expect(second.map((f) => f.event)).toEqual(["messages", "messages/partial"]);
      expect(second[1].data[0].content).toBe("Hello");
      expect(second[0].data[0]).toMatchObject({ type: "AIMessageChunk", content: "lo", id: "run-r-0" });
      expect(encoder.event({ id: 5, type: "progress", step: "model", modelCall: 1 })).toEqual([]);
    });

    it("returns the run's end as node updates, an interrupt, the values and the error", () => {
      const encoder = new ProtocolStreamEncoder(["updates", "values"], { runId: "r", threadId: "t" });
      const ai = protocolMessage({ role: "assistant", content: "", tokens: 1, toolCalls: [{ id: "c", name: "x", args: {} }] }, 1);
      const tool = protocolMessage({ role: "tool", content: "o", tokens: 1, toolCallId: "c" }, 2);
      const frames = encoder
        .end({ values: { messages: [] }, added: [ai, tool], interrupts: [{ id: "i", value: { approvals: [] } }], error: { code: "c", message: "m" } })
        .map(parse);
      expect(frames.map((f) => [f.event, Object.keys(f.data)[0]])).toEqual([
        ["updates", "agent"],
        ["updates", "tools"],
        ["updates", "__interrupt__"],
        ["values", "messages"],
        ["error", "error"],
      ]);
    });
  });
});
