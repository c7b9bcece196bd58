import { z } from "zod";
import { MAX_PAGE_SIZE } from "../store/conversation-store.js";
import { TURN_STATUSES } from "../store/turn-store.js";
import { TURN_FAILURE_CODES } from "../store/turn-lifecycle.js";
import { APPROVAL_STATUSES } from "../store/approval-store.js";

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
export const listQuery = z.strictObject({
  // Digits only: a coerced number would take "1e1" or "0x10" for a page size; anything else stays a string and fails.
  limit: z.preprocess((v) => (typeof v === "string" && /^[0-9]{1,6}$/.test(v) ? Number(v) : v), z.number().int().min(1).max(MAX_PAGE_SIZE)).optional(),
  cursor: z.string().min(1).max(200).optional().meta({ description: "`nextCursor` of the previous page." }),
});
export const turnsQuery = z.strictObject({ status: z.enum(TURN_STATUSES).optional() });
/** Archived turns before the given one (`GET .../archive`). */
export const MAX_ARCHIVE_PAGE_TURNS = 20;
const digits = (max: number) => z.preprocess((v) => (typeof v === "string" && /^[0-9]{1,9}$/.test(v) ? Number(v) : v), z.number().int().min(1).max(max));
export const archiveQuery = z.strictObject({
  before: digits(1_000_000_000)
    .optional()
    .meta({ description: "Turns numbered below this one (`nextBefore` of the previous page). Default: after the last archived turn." }),
  limit: digits(MAX_ARCHIVE_PAGE_TURNS)
    .optional()
    .meta({ description: `Turns per page, at most ${MAX_ARCHIVE_PAGE_TURNS}. Default: ${MAX_ARCHIVE_PAGE_TURNS}.` }),
});

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
const disposition = z
  .looseObject({
    fate: z.enum(["sent", "repaired", "condensed", "notice", "left-out"]),
    viewIndex: z.number().optional().meta({ description: "Where the view holds it (absent when left out)." }),
    turn: z.number().optional().meta({ description: "The turn it belongs to, oldest 0; absent before the first question." }),
    part: z.enum(["question", "answer"]).optional(),
    repair: z.string().optional().meta({ description: "How a repaired message was changed: blank-text, empty, tool-calls, merged." }),
    notice: z.enum(["tool-output", "out-of-sight"]).optional(),
    reason: z
      .string()
      .optional()
      .meta({
        description:
          "Why a tool output was replaced (over-threshold, over-budget) or a message left out " +
          "(outside-window, over-budget, exchange, orphan-tool-result, blank, trailing-text, system, before-first-question, unsupported-type).",
      }),
    handle: z.string().optional().meta({ description: "The artifact an offloaded output is kept in." }),
  })
  .meta({ description: "What the view did with one stored message of the checkpointed thread (`GET .../state`), in the stored order." });

export const errorResponse = z.object({
  error: z.looseObject({
    code: z.string().meta({ description: "Stable, machine-readable: invalid_request, unauthorized, not_found, conflict, …" }),
    message: z.string(),
    details: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
  }),
});

/** What API Gateway answers itself in AWS, before the api function runs (its JWT authorizer's 401, its throttling's 429). */
export const gatewayError = z.object({ message: z.string() });

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
export const turnResult = z.looseObject({ turnId: z.string(), status: z.literal("completed"), answer: z.string(), usage, context });
export const turnQueued = z.object({ turnId: z.string(), status: z.literal("queued"), location: z.string() });
export const recordedMessages = z.object({
  conversationId: z.string(),
  messages: z.array(z.looseObject({ turnId: z.string(), role: z.string(), content: z.string(), createdAt: isoDate })),
});
export const threadState = z.object({
  conversationId: z.string(),
  messages: z
    .array(message.extend({ tokens: z.number() }))
    .meta({ description: "The thread's working set: the finished turns the view can still use and the active turn." }),
  archivedTurns: z.number().meta({ description: "Finished turns before the working set, moved to the archive (`GET .../archive`)." }),
});
export const archivedTurns = z.object({
  conversationId: z.string(),
  archivedTurns: z.number(),
  turns: z.array(z.object({ turnNumber: z.number(), messages: z.array(message.extend({ tokens: z.number() })) })).meta({ description: "Oldest first." }),
  nextBefore: z.number().nullable().meta({ description: "`before` of the next (older) page; null after the first turn." }),
});
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
  error: z
    .looseObject({ code: z.enum(TURN_FAILURE_CODES), message: z.string() })
    .nullable()
    .meta({ description: 'Why a `failed` turn failed (docs/api.md, "Failure codes").' }),
  usage,
  context,
  progress,
  calls: z.array(
    z.looseObject({
      index: z.number(),
      startedAt: isoDate,
      durationMs: z.number(),
      usage,
      view: z.array(viewMessage),
      dispositions: z.array(disposition).nullable().meta({ description: "One for each stored message; null on calls recorded before they were kept." }),
    }),
  ),
  approvals: z.array(z.lazy(() => approvalView)).meta({ description: "The turn's tool calls that waited for a person, with the decisions." }),
});

export const approvalsQuery = z.strictObject({ status: z.enum(APPROVAL_STATUSES).optional() });

/** A decision on one waiting call: run it, run it with other arguments, or do not run it (the model reads the reason). */
export const decisionBody = z.discriminatedUnion("decision", [
  z.strictObject({ decision: z.literal("approve") }),
  z.strictObject({
    decision: z.literal("reject"),
    reason: z.string().trim().min(1).max(1_000).optional().meta({ description: "Shown to the model as why the call did not run." }),
  }),
  z.strictObject({
    decision: z.literal("edit"),
    args: z
      .record(z.string(), z.unknown())
      .meta({ description: "The arguments the call runs with instead; checked against the tool's arguments JSON Schema recorded with the approval." }),
  }),
]);

const principal = z.object({ issuer: z.string(), tenant: z.string().nullable(), subject: z.string() });
/** What the turn did before the call: its latest earlier calls, each cut and without hidden characters (docs/approvals.md). */
const approvalContext = z.object({
  readUntrusted: z.boolean(),
  calls: z.array(z.object({ tool: z.string(), args: z.string(), output: z.string(), untrusted: z.boolean() })),
  omittedCalls: z.number().int(),
});
export const approvalView = z.looseObject({
  approvalId: z.string(),
  conversationId: z.string(),
  turnId: z.string(),
  toolCallId: z.string(),
  tool: z.string(),
  args: z.record(z.string(), z.unknown()),
  argsHash: z.string(),
  requester: principal,
  approvers: z.object({ requester: z.boolean(), roles: z.array(z.string()) }),
  context: approvalContext.optional(),
  createdAt: isoDate,
  expiresAt: isoDate,
  status: z.enum(APPROVAL_STATUSES),
  decision: z
    .looseObject({
      decision: z.enum(["approve", "edit", "reject", "expire"]),
      by: principal.nullable(),
      at: isoDate,
      reason: z.string().optional(),
      args: z.record(z.string(), z.unknown()).optional(),
    })
    .nullable(),
});
export const approvalList = z.object({ conversationId: z.string(), approvals: z.array(approvalView) });
export const decisionResult = z.object({
  approval: approvalView,
  decided: z.boolean().meta({ description: "False when the same decision was taken before (the request was repeated)." }),
  resumed: z.boolean().meta({ description: "Whether the turn was handed on to resume: every call it waited on is decided." }),
});
export const turnAwaitingApproval = z.object({
  turnId: z.string(),
  status: z.literal("awaiting_approval"),
  approvals: z.array(
    z.object({
      approvalId: z.string(),
      toolCallId: z.string(),
      tool: z.string(),
      args: z.record(z.string(), z.unknown()),
      expiresAt: isoDate,
      context: approvalContext.optional(),
    }),
  ),
  location: z.string(),
});

/**
 * The server-sent events of a streamed turn: each event's name and its data (one line of JSON);
 * every event but `turn` carries an `id` to resume after (docs/streaming.md).
 */
export const turnStreamEvents = {
  turn: z.object({ turnId: z.string(), conversationId: z.string(), location: z.string() }).meta({ description: "First: which turn this stream follows." }),
  progress: z.object({ step: z.literal("model"), modelCall: z.number().int() }).meta({ description: "A model call begins (counted from 0)." }),
  tool_started: z.object({ tool: z.string(), toolCallId: z.string() }),
  tool_finished: z.object({ tool: z.string(), toolCallId: z.string(), status: z.enum(["success", "error"]) }),
  text: z.object({ modelCall: z.number().int(), delta: z.string() }).meta({ description: "Answer text as written; the answer is the last model call's text." }),
  approval_requested: z
    .object({ approvals: z.array(z.object({ approvalId: z.string(), toolCallId: z.string(), tool: z.string(), expiresAt: isoDate })) })
    .meta({
      description:
        "Last of this stream: the turn paused for these calls' approvals. Once they are decided, the turn's events continue after this id " +
        "(GET .../turns/{turnId}/events with Last-Event-ID).",
    }),
  done: z.object({ answer: z.string(), usage }).meta({ description: "Last: the turn completed." }),
  failed: z.object({ code: z.string(), message: z.string() }).meta({
    description:
      "Last: the turn failed for good; nothing retries it by itself (an attempt the worker retries ends no stream). `code`: one of the turn " +
      "record's failure codes, or the error body's code of the request that ran the turn (docs/api.md, \"Failure codes\").",
  }),
} as const;
