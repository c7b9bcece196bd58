import { z } from "zod";

/**
 * The shapes of an API conversation's members (`lib/api/member-routes.ts`, docs/api.md "Members"):
 * a member is an API user of the owner's own tenant, named by its subject.
 */

const subject = z.string().min(1).max(200);

/** Who to add: a subject of the owner's tenant. `tenant`, when given, must be the owner's (else 422 `member_outside_tenant`). */
export const addMemberBody = z.strictObject({
  subject: subject.meta({ description: "The user's subject (the token's `sub`)." }),
  tenant: z.string().min(1).max(200).nullable().optional().meta({ description: "The user's tenant; must be the conversation owner's. Default: the owner's." }),
});

const principal = z.object({ issuer: z.string(), tenant: z.string().nullable(), subject: z.string() });

export const memberView = principal.extend({
  addedAt: z.iso.datetime(),
  addedBy: principal,
});

export const memberList = z.object({
  conversationId: z.string(),
  owner: principal,
  members: z.array(memberView),
});
