import { describe, expect, it } from "vitest";
import { isTurnRecoveryEvent, TURN_RECOVERY_EVENT } from "../../lib/agent/turn-recovery-event.js";
import { APPROVAL_SWEEP_EVENT } from "../../lib/approvals/sweep-event.js";

describe("isTurnRecoveryEvent", () => {
  it("returns true for the schedule's event and false for a batch of turns or the approvals sweep", () => {
    expect(isTurnRecoveryEvent(TURN_RECOVERY_EVENT)).toBe(true);
    expect(isTurnRecoveryEvent({ Records: [] })).toBe(false);
    expect(isTurnRecoveryEvent(APPROVAL_SWEEP_EVENT)).toBe(false);
  });
});
