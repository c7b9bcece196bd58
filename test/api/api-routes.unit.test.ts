import { describe, expect, it } from "vitest";
import { approvalView, turnView } from "../../lib/api/api-routes.js";
import { apiPrincipal } from "../../lib/auth/principal.js";
import { buildModelView } from "../../lib/model-view/build-model-view.js";
import type { ApprovalDocument } from "../../lib/store/approval-store.js";
import { toViewMessages, ZERO_USAGE, type ModelCallRecord } from "../../lib/store/turn-record.js";
import type { TurnWithCalls } from "../../lib/store/turn-store.js";
import { answer, policy, user } from "../model-view/histories.js";

const created = new Date("2026-12-01T05:00:00.000Z");
const alice = apiPrincipal("alice");

function call(index: number, withDispositions: boolean): ModelCallRecord {
  const view = buildModelView([user("q1"), answer("a1"), user("q2")], policy());
  return {
    turnId: "turn-1",
    index,
    startedAt: new Date(created.getTime() + index * 1_000),
    durationMs: 40,
    view: toViewMessages(view.messages),
    stats: view.stats,
    ...(withDispositions && { dispositions: view.dispositions }),
    usage: ZERO_USAGE,
    toolCalls: [],
  };
}

function turn(overrides: Partial<TurnWithCalls> = {}): TurnWithCalls {
  return {
    _id: "turn-1",
    conversationId: "conv-1",
    status: "running",
    createdAt: created,
    updatedAt: created,
    usage: ZERO_USAGE,
    toolCalls: 0,
    progress: { step: "model", modelCalls: 0, at: created },
    calls: [],
    ...overrides,
  };
}

function approval(overrides: Partial<ApprovalDocument> = {}): ApprovalDocument {
  return {
    _id: "approval-1",
    conversationId: "conv-1",
    turnId: "turn-1",
    toolCallId: "call-1",
    tool: "create_follow_up",
    args: { title: "Call Ada" },
    argsHash: "h1",
    requester: alice,
    approvers: { requester: true, roles: [] },
    createdAt: created,
    deadline: new Date("2026-12-01T13:00:00.000Z"),
    status: "pending",
    expiresAt: new Date("2027-01-01T00:00:00.000Z"),
    ...overrides,
  };
}

describe("api-routes", () => {
  describe("turnView", () => {
    it("returns dates as ISO strings and null for what a running turn has not got yet", () => {
      expect(turnView(turn())).toMatchObject({
        turnId: "turn-1",
        createdAt: "2026-12-01T05:00:00.000Z",
        completedAt: null,
        durationMs: null,
        answer: null,
        error: null,
        replaces: null,
        replacedBy: null,
        progress: { step: "model", at: "2026-12-01T05:00:00.000Z" },
        calls: [],
      });
    });

    it("returns each call with its view and dispositions, and null dispositions for a call recorded before they were kept", () => {
      const view = turnView(turn({ calls: [call(0, false), call(1, true)] }));
      expect(view.calls.map((c) => c.startedAt)).toEqual(["2026-12-01T05:00:00.000Z", "2026-12-01T05:00:01.000Z"]);
      expect(view.calls[0].dispositions).toBeNull();
      expect(view.calls[1].dispositions?.map((d) => d.fate)).toEqual(["condensed", "condensed", "sent"]);
      expect(view.calls[1].view.map((m) => m.role)).toEqual(["system", "user", "assistant", "user"]);
    });

    it("returns the context of the last call against the state", () => {
      const calls = [call(0, true), call(1, true)];
      expect(turnView(turn({ calls })).context).toEqual({
        modelCalls: 2,
        stateTokens: calls[1].stats.stateTokens,
        viewTokens: calls[1].stats.viewTokens,
        budget: calls[1].stats.budget,
        finishedTurnsKept: 1,
        omittedOutputs: 0,
      });
    });
  });

  describe("approvalView", () => {
    it("returns the decision deadline as expiresAt, not the document's retention", () => {
      expect(approvalView(approval())).toMatchObject({ approvalId: "approval-1", expiresAt: "2026-12-01T13:00:00.000Z", decision: null });
    });

    it("returns who decided, the reason of a rejection and the arguments of an edit; nobody for an expiry", () => {
      const at = new Date("2026-12-01T06:00:00.000Z");
      expect(approvalView(approval({ status: "rejected", decision: { kind: "reject", reason: "not now", by: alice, at } })).decision).toEqual({
        decision: "reject",
        by: alice,
        at: "2026-12-01T06:00:00.000Z",
        reason: "not now",
      });
      const edited = approvalView(approval({ status: "edited", decision: { kind: "edit", args: { title: "Call Bob" }, by: alice, at } }));
      expect(edited.decision).toEqual({ decision: "edit", by: alice, at: "2026-12-01T06:00:00.000Z", args: { title: "Call Bob" } });
      expect(approvalView(approval({ status: "expired", decision: { kind: "expire", at } })).decision).toEqual({
        decision: "expire",
        by: null,
        at: "2026-12-01T06:00:00.000Z",
      });
    });
  });
});
