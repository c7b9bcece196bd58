import { describe, expect, it } from "vitest";
import { resumeValue, runBody, threadMetadata } from "../../lib/api/agent-protocol-schemas.js";

describe("agent-protocol-schemas", () => {
  describe("threadMetadata", () => {
    it("returns flat metadata", () => {
      expect(threadMetadata.parse({ a: "x", b: 1, c: true, d: null })).toEqual({ a: "x", b: 1, c: true, d: null });
    });

    it("fails for nested values, operator-like keys and more than 32 keys", () => {
      expect(threadMetadata.safeParse({ a: { b: 1 } }).success).toBe(false);
      expect(threadMetadata.safeParse({ $where: "x" }).success).toBe(false);
      expect(threadMetadata.safeParse({ "a.b": "x" }).success).toBe(false);
      expect(threadMetadata.safeParse(Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, i]))).success).toBe(false);
    });
  });

  describe("runBody", () => {
    it("returns what the SDK sends, unknown fields kept aside", () => {
      const body = runBody.parse({ assistant_id: "threadwise", input: { messages: [{ type: "human", content: "hi" }] }, stream_resumable: false });
      expect(body.input?.messages[0].content).toBe("hi");
    });

    it("fails without an assistant or with an empty message list", () => {
      expect(runBody.safeParse({ input: { messages: [{ type: "human", content: "hi" }] } }).success).toBe(false);
      expect(runBody.safeParse({ assistant_id: "threadwise", input: { messages: [] } }).success).toBe(false);
    });
  });

  describe("resumeValue", () => {
    it("returns a decision for all or decisions by id", () => {
      expect(resumeValue.safeParse("approve").success).toBe(true);
      expect(resumeValue.safeParse({ decisions: { a: { decision: "edit", args: {} } } }).success).toBe(true);
    });

    it("fails for an edit without arguments or an unknown decision", () => {
      expect(resumeValue.safeParse({ decision: "edit" }).success).toBe(false);
      expect(resumeValue.safeParse({ decision: "later" }).success).toBe(false);
    });
  });
});
