import { describe, expect, it } from "vitest";
import { isKeyMaintenanceEvent, KEY_MAINTENANCE_EVENT } from "../../lib/lifecycle/key-maintenance-event.js";

describe("isKeyMaintenanceEvent", () => {
  it("returns true for the event the stack's key schedule sends", () => {
    expect(isKeyMaintenanceEvent(KEY_MAINTENANCE_EVENT)).toBe(true);
    expect(isKeyMaintenanceEvent({ task: "key-maintenance" })).toBe(true);
  });

  it.each([[{ Records: [] }], [{ task: "turn-recovery" }], [null], ["key-maintenance"]])(
    "returns false for %j (a queue batch or another schedule's)",
    (event) => {
      expect(isKeyMaintenanceEvent(event)).toBe(false);
    },
  );
});
