import type { FaultInjector, FaultPoint } from "../../lib/agent/fault-points.js";

/** What a process dying at a fault point looks like to the code around it. */
export class SimulatedCrash extends Error {
  override name = "SimulatedCrash";
}

/** Throws once at the chosen point, as a process dying there would stop the turn. */
export function crashOnceAt(point: FaultPoint): FaultInjector & { fired: boolean } {
  return {
    fired: false,
    at(p) {
      if (p === point && !this.fired) {
        this.fired = true;
        throw new SimulatedCrash(point);
      }
    },
  };
}
