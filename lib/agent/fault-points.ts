/**
 * Points in a turn where a process can die. Production never passes an injector, so these
 * are inert there; tests pass one that throws to prove a retry resumes without loss or repeats.
 */
export const FAULT_POINTS = ["after-user-message", "after-model-call", "after-tool-effect", "after-answer", "after-record"] as const;

export type FaultPoint = (typeof FAULT_POINTS)[number];

export interface FaultInjector {
  at(point: FaultPoint): void;
}
