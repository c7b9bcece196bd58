import { z } from "zod";
import { MAX_METADATA_KEYS } from "../store/conversation-store.js";

/**
 * The Agent Protocol's request shapes as Threadwise serves them (docs/agent-protocol.md): what
 * `@langchain/langgraph-sdk`'s `Client` sends. Fields the SDK always sends and Threadwise has no
 * use for are accepted and ignored; fields that would change what a run does in a way Threadwise
 * cannot honour are refused by the routes with a 400 naming them.
 */

/** The one assistant a deployment serves: its graph and its shaped view. */
export const AGENT_PROTOCOL_ASSISTANT_ID = "threadwise";

/** Stream modes served; others are refused with a 400 naming these. */
export const PROTOCOL_STREAM_MODES = ["values", "messages-tuple", "messages", "updates", "custom", "events"] as const;
export type ProtocolStreamMode = (typeof PROTOCOL_STREAM_MODES)[number];

/** Multitask strategies: `reject` (the default) and `enqueue` map onto today's behaviour; the others are refused. */
export const PROTOCOL_MULTITASK_STRATEGIES = ["reject", "enqueue"] as const;

const metadataValue = z.union([z.string().max(1_000), z.number(), z.boolean(), z.null()]);
/** Thread metadata: at most 32 flat keys (the store holds a thread to that after every merge too), searchable by equality. */
export const threadMetadata = z
  .record(
    z
      .string()
      .min(1)
      .max(100)
      .regex(/^[^$.\0]+$/),
    metadataValue,
  )
  .refine((m) => Object.keys(m).length <= MAX_METADATA_KEYS, `at most ${MAX_METADATA_KEYS} metadata keys`);

export const createThreadBody = z.looseObject({
  metadata: threadMetadata.optional(),
  thread_id: z.string().optional(),
  if_exists: z.enum(["raise", "do_nothing"]).optional(),
  supersteps: z.unknown().optional(),
});

export const patchThreadBody = z.looseObject({ metadata: threadMetadata.optional() });

export const searchThreadsBody = z.looseObject({
  metadata: threadMetadata.nullish(),
  ids: z.array(z.string()).max(100).nullish(),
  limit: z.number().int().min(1).max(100).optional(),
  offset: z.number().int().min(0).max(10_000).optional(),
  status: z.enum(["idle", "busy", "interrupted", "error"]).nullish(),
});

export const historyBody = z.looseObject({
  limit: z.number().int().min(1).max(100).optional(),
  before: z.looseObject({ configurable: z.looseObject({ checkpoint_id: z.string().optional() }).optional() }).nullish(),
});

const textBlock = z.looseObject({ type: z.literal("text"), text: z.string() });
/** A message as the SDK sends it: a LangChain message dict (`type`) or an OpenAI-style one (`role`). */
export const protocolInputMessage = z.looseObject({
  type: z.string().optional(),
  role: z.string().optional(),
  content: z.union([z.string(), z.array(textBlock)]),
});

export const runBody = z.looseObject({
  assistant_id: z.string().min(1).max(200),
  input: z.looseObject({ messages: z.array(protocolInputMessage).min(1).max(20) }).nullish(),
  command: z.looseObject({ resume: z.unknown().optional(), update: z.unknown().optional(), goto: z.unknown().optional() }).nullish(),
  stream_mode: z.union([z.string(), z.array(z.string()).max(10)]).optional(),
  multitask_strategy: z.string().nullish(),
  metadata: z.record(z.string(), z.unknown()).nullish(),
  config: z.unknown().optional(),
  context: z.unknown().optional(),
  checkpoint: z.unknown().optional(),
  checkpoint_id: z.unknown().optional(),
  interrupt_before: z.unknown().optional(),
  interrupt_after: z.unknown().optional(),
  webhook: z.unknown().optional(),
  after_seconds: z.unknown().optional(),
  if_not_exists: z.enum(["create", "reject"]).nullish(),
});
export type RunBody = z.infer<typeof runBody>;

/** A decision as a `Command`'s resume value gives it, for one approval or (without an id) for every waiting one. */
export const resumeDecision = z.union([
  z.enum(["approve", "reject"]),
  z.strictObject({ decision: z.literal("approve") }),
  z.strictObject({ decision: z.literal("reject"), reason: z.string().max(500).optional() }),
  z.strictObject({ decision: z.literal("edit"), args: z.record(z.string(), z.unknown()) }),
]);
export type ResumeDecision = z.infer<typeof resumeDecision>;

/** `resume`: one decision for every waiting call, or decisions by approval id. */
export const resumeValue = z.union([resumeDecision, z.strictObject({ decisions: z.record(z.string(), resumeDecision) })]);

export const cancelQuery = z.looseObject({
  wait: z.enum(["0", "1", "true", "false"]).optional(),
  action: z.enum(["interrupt", "rollback"]).optional(),
});

export const runsListQuery = z.looseObject({
  limit: z.preprocess((v) => (typeof v === "string" && /^[0-9]{1,3}$/.test(v) ? Number(v) : v), z.number().int().min(1).max(100)).optional(),
  offset: z.preprocess((v) => (typeof v === "string" && /^[0-9]{1,5}$/.test(v) ? Number(v) : v), z.number().int().min(0)).optional(),
});

export const streamQuery = z.looseObject({ stream_mode: z.union([z.string(), z.array(z.string())]).optional() });

/* Response shapes, for the OpenAPI document: open objects, as the protocol's own schemas are. */
const isoDate = z.iso.datetime();
const protocolMessage = z.looseObject({ type: z.enum(["human", "ai", "tool", "system"]), id: z.string(), content: z.string() });
const values = z.looseObject({ messages: z.array(protocolMessage) });
const interrupt = z.looseObject({ id: z.string(), value: z.unknown() });
const checkpoint = z.looseObject({ thread_id: z.string(), checkpoint_ns: z.string(), checkpoint_id: z.string().nullable() });

export const protocolThread = z.looseObject({
  thread_id: z.string(),
  created_at: isoDate,
  updated_at: isoDate,
  metadata: z.record(z.string(), z.unknown()),
  status: z.enum(["idle", "busy", "interrupted", "error"]),
  values,
  interrupts: z.record(z.string(), z.array(interrupt)),
});
export const protocolThreadList = z.array(protocolThread);
export const protocolThreadState = z.looseObject({
  values,
  next: z.array(z.string()),
  checkpoint,
  metadata: z.record(z.string(), z.unknown()),
  created_at: isoDate.nullable(),
  parent_checkpoint: checkpoint.nullable(),
  tasks: z.array(z.looseObject({ id: z.string(), name: z.string(), interrupts: z.array(interrupt) })),
});
export const protocolHistory = z.array(protocolThreadState);
/** What `runs.wait` and `join` return: the values, with `__interrupt__` while approvals wait or `__error__` for a failed run. */
export const protocolRunResult = values.extend({
  __interrupt__: z.array(interrupt).optional(),
  __error__: z.looseObject({ error: z.string(), message: z.string() }).optional(),
});
export const protocolRun = z.looseObject({
  run_id: z.string(),
  thread_id: z.string(),
  assistant_id: z.string(),
  created_at: isoDate,
  updated_at: isoDate,
  status: z.enum(["pending", "running", "error", "success", "timeout", "interrupted"]),
});
export const protocolRunList = z.array(protocolRun);
export const protocolAssistant = z.looseObject({ assistant_id: z.string(), graph_id: z.string(), name: z.string() });
export const protocolAssistantList = z.array(protocolAssistant);
