import { describe, expect, it } from "vitest";
import { decisionBody, idParam, listQuery, postMessageBody, turnDetail, turnStreamEvents, turnsQuery } from "../../lib/api/schemas.js";
import { TURN_EVENT_TYPES } from "../../lib/events/turn-event-types.js";
import { MAX_PAGE_SIZE } from "../../lib/store/conversation-store.js";

/** The request schemas at the API's boundary; the response schemas are checked against the server in test/api/openapi.test.ts. */
describe("schemas", () => {
  describe("postMessageBody", () => {
    it("returns the content, and refuses a body with another field or content that is not a string", () => {
      expect(postMessageBody.parse({ content: "hi" })).toEqual({ content: "hi" });
      expect(postMessageBody.safeParse({ content: "hi", role: "system" }).success).toBe(false);
      expect(postMessageBody.safeParse({ content: 42 }).success).toBe(false);
    });
  });

  describe("listQuery", () => {
    it("returns the limit from its query-string text, between 1 and the page size", () => {
      expect(listQuery.parse({ limit: "20" })).toEqual({ limit: 20 });
      expect(listQuery.parse({ limit: String(MAX_PAGE_SIZE) }).limit).toBe(MAX_PAGE_SIZE);
      for (const limit of ["0", String(MAX_PAGE_SIZE + 1), "2.5", "many"]) expect(listQuery.safeParse({ limit }).success).toBe(false);
    });

    it("refuses an empty cursor", () => {
      expect(listQuery.safeParse({ cursor: "" }).success).toBe(false);
    });
  });

  describe("turnsQuery", () => {
    it("returns a known status and refuses another or an unknown parameter", () => {
      expect(turnsQuery.parse({ status: "completed" })).toEqual({ status: "completed" });
      expect(turnsQuery.safeParse({ status: "finished" }).success).toBe(false);
      expect(turnsQuery.safeParse({ page: "2" }).success).toBe(false);
    });
  });

  describe("idParam", () => {
    it("refuses an empty id and one over 100 characters", () => {
      expect(idParam.safeParse("").success).toBe(false);
      expect(idParam.safeParse("x".repeat(101)).success).toBe(false);
    });
  });

  describe("decisionBody", () => {
    it("returns each kind of decision, a rejection's reason trimmed", () => {
      expect(decisionBody.parse({ decision: "approve" })).toEqual({ decision: "approve" });
      expect(decisionBody.parse({ decision: "reject", reason: "  wrong owner " })).toEqual({ decision: "reject", reason: "wrong owner" });
      expect(decisionBody.parse({ decision: "edit", args: { title: "x" } })).toEqual({ decision: "edit", args: { title: "x" } });
    });

    it("refuses an unknown decision, a blank reason, an edit without arguments, and arguments on an approval", () => {
      for (const body of [{ decision: "maybe" }, { decision: "reject", reason: "   " }, { decision: "edit" }, { decision: "approve", args: {} }]) {
        expect(decisionBody.safeParse(body).success).toBe(false);
      }
    });
  });

  describe("turnStreamEvents", () => {
    it("describes every event a turn emits, and the opening turn event", () => {
      expect(Object.keys(turnStreamEvents).sort()).toEqual(["turn", ...TURN_EVENT_TYPES].sort());
    });
  });

  describe("turnDetail", () => {
    it("returns a turn's approvals through their lazily referenced schema", () => {
      const shape = turnDetail.shape as Record<string, { safeParse(value: unknown): { success: boolean } }>;
      expect(shape.approvals.safeParse([{ approvalId: "a" }]).success).toBe(false);
      expect(shape.approvals.safeParse([]).success).toBe(true);
    });
  });
});
