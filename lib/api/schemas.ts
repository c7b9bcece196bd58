import { z } from "zod";
import { MAX_PAGE_SIZE } from "../store/conversation-store.js";
import { TURN_STATUSES } from "../store/turn-store.js";

/**
 * The HTTP API's shapes, in one place: request schemas validate what arrives, response schemas
 * describe what leaves, and `openapi.ts` generates the OpenAPI document from both. Objects that
 * carry records (usage, context, model calls) are open, so a field added to a record is not a
 * breaking change.
 */

/** A conversation or turn id, as the path carries it. */
export const idParam = z.string().min(1).max(100).meta({ description: "An id the API returned (a UUID)." });

export const postMessageBody = z.strictObject({ content: z.string().meta({ description: "The question; trimmed, never blank." }) });
export const createConversationBody = z.strictObject({});
export const regenerateBody = z.strictObject({});
export const listQuery = z.object({
  limit: z.coerce.number().int().min(1).max(MAX_PAGE_SIZE).optional(),
  cursor: z.string().min(1).max(200).optional().meta({ description: "`nextCursor` of the previous page." }),
});
export const turnsQuery = z.strictObject({ status: z.enum(TURN_STATUSES).optional() });

const isoDate = z.iso.datetime();
const usage = z.looseObject({ inputTokens: z.number(), outputTokens: z.number(), totalTokens: z.number() });
const context = z.looseObject({
  modelCalls: z.number(),
  stateTokens: z.number(),
  viewTokens: z.number(),
  budget: z.number(),
  finishedTurnsKept: z.number(),
  omittedOutputs: z.number(),
});
const progress = z.looseObject({ step: z.string(), tool: z.string().nullish(), modelCalls: z.number(), at: isoDate });
const message = z.looseObject({ role: z.enum(["system", "user", "assistant", "tool"]), content: z.string() });
const viewMessage = message.extend({
  tokens: z
    .number()
    .optional()
    .meta({ description: "Tokens of the message, tool calls included, as the view counted them; absent on calls recorded before it was kept." }),
});

export const errorResponse = z.object({
  error: z.looseObject({
    code: z.string().meta({ description: "Stable, machine-readable: invalid_request, unauthorized, not_found, conflict, …" }),
    message: z.string(),
    details: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
  }),
});

export const health = z.object({ status: z.literal("ok") });
export const ready = z.object({ status: z.literal("ready"), database: z.literal("ok") });
export const conversationCreated = z.object({ conversationId: z.string(), createdAt: isoDate });
export const conversationSummary = z.object({
  conversationId: z.string(),
  title: z.string().nullable(),
  channel: z.string(),
  createdAt: isoDate,
  updatedAt: isoDate,
});
export const conversationPage = z.object({ conversations: z.array(conversationSummary), nextCursor: z.string().nullable() });
export const turnResult = z.looseObject({ turnId: z.string(), answer: z.string(), usage, context });
export const turnQueued = z.object({ turnId: z.string(), status: z.literal("queued"), location: z.string() });
export const recordedMessages = z.object({
  conversationId: z.string(),
  messages: z.array(z.looseObject({ turnId: z.string(), role: z.string(), content: z.string(), createdAt: isoDate })),
});
export const threadState = z.object({ conversationId: z.string(), messages: z.array(message.extend({ tokens: z.number() })) });
export const turnSummary = z.looseObject({ turnId: z.string(), status: z.enum(TURN_STATUSES), createdAt: isoDate, completedAt: isoDate.nullable(), progress });
export const turnList = z.object({ conversationId: z.string(), turns: z.array(turnSummary) });
export const turnDetail = z.looseObject({
  turnId: z.string(),
  conversationId: z.string(),
  status: z.enum(TURN_STATUSES),
  createdAt: isoDate,
  completedAt: isoDate.nullable(),
  durationMs: z.number().nullable(),
  answer: z.string().nullable(),
  error: z.looseObject({ code: z.string(), message: z.string() }).nullable(),
  usage,
  context,
  progress,
  calls: z.array(z.looseObject({ index: z.number(), startedAt: isoDate, durationMs: z.number(), usage, view: z.array(viewMessage) })),
});
