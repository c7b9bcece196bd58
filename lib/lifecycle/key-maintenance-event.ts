import { z } from "zod";

/** What the stack's key schedule sends the worker: rotate the keys due, then re-encrypt (docs/security.md, "Rotation"). */
export const KEY_MAINTENANCE_EVENT = { task: "key-maintenance" } as const;
export type KeyMaintenanceEvent = typeof KEY_MAINTENANCE_EVENT;

const keyMaintenanceEventSchema = z.object({ task: z.literal(KEY_MAINTENANCE_EVENT.task) });

/** Whether the worker's event is the key schedule's rather than a batch of queued turns. */
export function isKeyMaintenanceEvent(event: unknown): event is KeyMaintenanceEvent {
  return keyMaintenanceEventSchema.safeParse(event).success;
}
