import { z } from "zod";

/** What the stack's schedule sends the worker: run the approvals sweep (docs/approvals.md, "Expiry"). */
export const APPROVAL_SWEEP_EVENT = { task: "approval-sweep" } as const;
export type ApprovalSweepEvent = typeof APPROVAL_SWEEP_EVENT;

const sweepEventSchema = z.object({ task: z.literal(APPROVAL_SWEEP_EVENT.task) });

/** Whether the worker's event is the schedule's sweep rather than a batch of queued turns. */
export function isApprovalSweepEvent(event: unknown): event is ApprovalSweepEvent {
  return sweepEventSchema.safeParse(event).success;
}
