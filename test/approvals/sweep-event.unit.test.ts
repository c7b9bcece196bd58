import { describe, expect, it } from "vitest";
import { APPROVAL_SWEEP_EVENT, isApprovalSweepEvent } from "../../lib/approvals/sweep-event.js";

describe("isApprovalSweepEvent", () => {
  it("returns true for the event the stack's schedule sends", () => {
    expect(isApprovalSweepEvent(APPROVAL_SWEEP_EVENT)).toBe(true);
    expect(isApprovalSweepEvent({ task: "approval-sweep" })).toBe(true);
  });

  it.each([[{ Records: [] }], [{ task: "other" }], [null], ["approval-sweep"]])("returns false for %j (a queue batch or anything else)", (event) => {
    expect(isApprovalSweepEvent(event)).toBe(false);
  });
});
