import { describe, expect, it } from "vitest";
import { isFinalEvent, modelMessageId, TURN_EVENT_TYPES, TURN_SUPERSEDED_EVENT, type TurnEventBody } from "../../lib/events/turn-event-types.js";

const ONE_OF_EACH: TurnEventBody[] = [
  { type: "progress", step: "model", modelCall: 0 },
  { type: "tool_started", tool: "sql_query", toolCallId: "c1" },
  { type: "tool_finished", tool: "sql_query", toolCallId: "c1", status: "success" },
  { type: "text", modelCall: 0, delta: "Hel" },
  { type: "approval_requested", approvals: [] },
  { type: "done", answer: "Hello", usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 } },
  { type: "failed", code: "model_error", message: "down" },
];

describe("turn events", () => {
  describe("isFinalEvent", () => {
    it("returns true for done, failed and approval_requested, and false for the events a turn goes on after", () => {
      expect(ONE_OF_EACH.filter(isFinalEvent).map((e) => e.type)).toEqual(["approval_requested", "done", "failed"]);
    });

    it("returns true for the superseded turn's event", () => {
      expect(isFinalEvent(TURN_SUPERSEDED_EVENT)).toBe(true);
    });
  });

  describe("modelMessageId", () => {
    it("returns one id per turn and model call", () => {
      expect(modelMessageId("t1", 0)).toBe(modelMessageId("t1", 0));
      expect(new Set([modelMessageId("t1", 0), modelMessageId("t1", 1), modelMessageId("t2", 0)]).size).toBe(3);
    });
  });

  it("names every event type once", () => {
    expect(TURN_EVENT_TYPES).toEqual(ONE_OF_EACH.map((e) => e.type));
  });
});
