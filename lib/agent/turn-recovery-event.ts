import { z } from "zod";

/** What the stack's recovery schedule sends the worker: run the turn recovery sweep (docs/recovery.md). */
export const TURN_RECOVERY_EVENT = { task: "turn-recovery" } as const;
export type TurnRecoveryEvent = typeof TURN_RECOVERY_EVENT;

const recoveryEventSchema = z.object({ task: z.literal(TURN_RECOVERY_EVENT.task) });

/** Whether the worker's event is the recovery schedule's rather than a batch of queued turns. */
export function isTurnRecoveryEvent(event: unknown): event is TurnRecoveryEvent {
  return recoveryEventSchema.safeParse(event).success;
}
