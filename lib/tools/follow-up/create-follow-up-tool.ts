import { createHash } from "node:crypto";
import type { Collection } from "mongodb";
import { z } from "zod";
import { ToolError } from "../../errors.js";
import type { Principal } from "../../auth/principal.js";
import { CLEAR_FIELDS } from "../../crypto/clear-field-cipher.js";
import type { ContentCipher } from "../../crypto/content-cipher.js";
import type { ToolContext, ToolDefinition } from "../tool.js";

/** A follow-up task as recorded in the `follow_ups` collection. */
export interface FollowUpDocument {
  /** `conversationId:toolCallId`: recording twice under one call is a no-op. */
  _id: string;
  followUpId: string;
  conversationId: string;
  turnId: string;
  /** Who asked for it: issuer kind, tenant and subject, as verified. */
  createdBy: Principal;
  title: string;
  details?: string;
  owner?: string;
  dueDate?: string;
  createdAt: Date;
  /** The turn attempt (lease epoch) that last recorded it: a stale attempt takes back only its own write. */
  attempt?: number;
  /** Retention: the conversation's, from the first write. */
  expiresAt?: Date;
}

export interface CreateFollowUpToolOptions {
  collection: Collection<FollowUpDocument>;
  /** Absent: the follow-up is recorded only. */
  webhookUrl?: string;
  /** Default: recorded clear (`CLEAR_FIELDS`); the app passes the database's. `title`, `details` and `owner` are encrypted. */
  cipher?: ContentCipher;
  fetch?: typeof fetch;
}

const schema = z.object({
  title: z.string().trim().min(3).max(200).describe("What should be done, in one line"),
  details: z.string().max(2_000).optional().describe("Context: the finding that prompted it"),
  owner: z.string().min(1).max(120).optional().describe("Who should do it (name or email)"),
  dueDate: z.iso.date().optional().describe("Due date, YYYY-MM-DD"),
});

type FollowUpInput = z.infer<typeof schema>;

/**
 * `create_follow_up`: records a follow-up task and posts it to the configured webhook. It has a
 * side effect, so the registry runs it through the idempotency guard; the record is also keyed
 * by the call and the webhook gets the same key in `Idempotency-Key`, so even a crash between
 * the post and the guard's checkpoint cannot produce a second task downstream.
 */
export function createFollowUpTool(options: CreateFollowUpToolOptions): ToolDefinition<typeof schema> {
  const post = options.fetch ?? fetch;
  return {
    name: "create_follow_up",
    description:
      "Create a follow-up task (title, optional details, owner and due date) and notify the team's task webhook. " +
      "Use only when the user asks for a follow-up or action item.",
    schema,
    sideEffects: true,
    async run(input: FollowUpInput, ctx: ToolContext): Promise<string> {
      const key = `${ctx.conversationId}:${ctx.toolCallId}`;
      const followUpId = `FU-${createHash("sha256").update(key).digest("hex").slice(0, 8).toUpperCase()}`;
      const cipher = options.cipher ?? CLEAR_FIELDS;
      const seal = (field: string, text: string) => cipher.sealText(ctx.conversationId, { collection: "follow_ups", id: key, field }, text);
      const doc: FollowUpDocument = {
        _id: key,
        followUpId,
        conversationId: ctx.conversationId,
        turnId: ctx.turnId,
        createdBy: ctx.caller.principal,
        title: (await seal("title", input.title)) as string,
        ...(input.details !== undefined && { details: (await seal("details", input.details)) as string }),
        ...(input.owner !== undefined && { owner: (await seal("owner", input.owner)) as string }),
        ...(input.dueDate !== undefined && { dueDate: input.dueDate }),
        createdAt: new Date(),
      };
      // Recorded only while the turn holds the conversation: a stale attempt or a deleted conversation gets no task.
      if (ctx.fence) await ctx.fence.insertOnce(options.collection, doc);
      else await options.collection.updateOne({ _id: key }, { $setOnInsert: doc }, { upsert: true });
      const summary = `follow-up ${followUpId}: "${input.title}"${input.owner ? `, owner ${input.owner}` : ""}${input.dueDate ? `, due ${input.dueDate}` : ""}`;
      if (!options.webhookUrl) return `Recorded ${summary}. (No task webhook is configured, so nobody was notified.)`;

      let response: Response;
      try {
        response = await post(options.webhookUrl, {
          method: "POST",
          headers: { "content-type": "application/json", "idempotency-key": key },
          body: JSON.stringify({
            followUpId,
            title: input.title,
            details: input.details,
            owner: input.owner,
            dueDate: input.dueDate,
            conversationId: ctx.conversationId,
            createdBy: ctx.caller.principal,
          }),
          signal: ctx.signal,
        });
      } catch (error) {
        throw new ToolError(`recorded ${followUpId} but could not reach the task webhook; try again later`, "create_follow_up", {
          cause: error,
        });
      }
      if (!response.ok) {
        throw new ToolError(`recorded ${followUpId} but the task webhook answered ${response.status}; try again later`, "create_follow_up");
      }
      return `Created ${summary}. The task webhook accepted it (HTTP ${response.status}).`;
    },
  };
}
