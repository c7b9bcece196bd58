import { AIMessage } from "@langchain/core/messages";
import { describe, expect, it } from "vitest";
import { notRunMessage, withEditedCalls } from "../../lib/agent/approval-gate.js";
import { TOKEN_COUNT_KEY } from "../../lib/model-view/token-counter.js";

const tokenCountOf = (m: { response_metadata: Record<string, unknown> }) => m.response_metadata[TOKEN_COUNT_KEY] as number;

const call = { id: "call1", name: "create_follow_up" };

describe("approval gate", () => {
  describe("notRunMessage", () => {
    it("returns an error result naming who rejected the call and their reason", () => {
      const message = notRunMessage(call, { kind: "reject", by: "ada", reason: "wrong owner" });
      expect(message).toMatchObject({ tool_call_id: "call1", name: "create_follow_up", status: "error" });
      expect(message.content).toBe("Not run: ada rejected this call, saying: wrong owner. Do not call it again unless the user asks.");
    });

    it("returns a rejection without a reason as such", () => {
      expect(notRunMessage(call, { kind: "reject", by: "ada" }).content).toBe("Not run: ada rejected this call. Do not call it again unless the user asks.");
    });

    it("returns an expiry naming the deadline, and a call without a decision as such", () => {
      expect(notRunMessage(call, { kind: "expire", deadline: "2026-12-01T18:00:00.000Z" }).content).toMatch(
        /^Not run: nobody approved this call before its approval expired at 2026-12-01T18:00:00.000Z\./,
      );
      expect(notRunMessage(call, undefined).content).toBe("Not run: no decision was recorded for this call.");
    });

    it("returns a message stamped with its token count", () => {
      expect(tokenCountOf(notRunMessage(call, undefined))).toBeGreaterThan(0);
    });
  });

  describe("withEditedCalls", () => {
    const message = new AIMessage({
      id: "m1",
      content: [
        { type: "text", text: "I'll file two." },
        { type: "tool_use", id: "call1", name: "create_follow_up", input: { title: "a" } },
        { type: "tool_use", id: "call2", name: "create_follow_up", input: { title: "b" } },
      ],
      tool_calls: [
        { id: "call1", name: "create_follow_up", args: { title: "a" } },
        { id: "call2", name: "create_follow_up", args: { title: "b" } },
      ],
    });

    it("returns the message under the same id with the edited arguments in its tool calls and tool_use blocks", () => {
      const edited = withEditedCalls(message, new Map([["call2", { title: "B!" }]]));
      expect(edited.id).toBe("m1");
      expect(edited.tool_calls?.map((c) => c.args)).toEqual([{ title: "a" }, { title: "B!" }]);
      expect((edited.content as { input?: unknown }[]).map((b) => b.input)).toEqual([undefined, { title: "a" }, { title: "B!" }]);
      expect(tokenCountOf(edited)).toBeGreaterThan(0);
    });

    it("leaves the original message as it was", () => {
      withEditedCalls(message, new Map([["call1", { title: "changed" }]]));
      expect(message.tool_calls?.[0].args).toEqual({ title: "a" });
    });

    it("returns string content as it is", () => {
      const plain = new AIMessage({ id: "m2", content: "", tool_calls: [{ id: "c", name: "t", args: { x: 1 } }] });
      const edited = withEditedCalls(plain, new Map([["c", { x: 2 }]]));
      expect(edited.content).toBe("");
      expect(edited.tool_calls?.[0].args).toEqual({ x: 2 });
    });
  });
});
