/**
 * Points in a turn where a process can die. Production never passes an injector, so these
 * are inert there; tests pass one that throws to prove a retry resumes without loss or repeats.
 */
export const FAULT_POINTS = [
  "after-user-message",
  "after-model-call",
  "before-tool-effect",
  "after-tool-effect",
  "after-answer",
  "after-record-answer",
  "after-record",
] as const;

/** Points around a decision on an approval (`Approvals.decide`): between recording it and resuming the turn. */
export const APPROVAL_FAULT_POINTS = ["after-decision", "after-resume-enqueued"] as const;

/** Between archiving a block of finished turns and removing them from the thread (`lib/agent/working-set.ts`); only a turn that archives passes it. */
export const ARCHIVE_FAULT_POINTS = ["after-archive"] as const;

export type FaultPoint = (typeof FAULT_POINTS)[number] | (typeof APPROVAL_FAULT_POINTS)[number] | (typeof ARCHIVE_FAULT_POINTS)[number];

export interface FaultInjector {
  at(point: FaultPoint): void;
}
