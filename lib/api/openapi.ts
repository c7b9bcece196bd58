import { z } from "zod";
import * as s from "./schemas.js";
import * as p from "./agent-protocol-schemas.js";
import * as admin from "./admin-schemas.js";
import * as mcp from "./mcp-schemas.js";
import * as adminMcp from "./admin-mcp-schemas.js";
import * as lifecycle from "./lifecycle-schemas.js";
import * as members from "./member-schemas.js";
import * as contentKeys from "./content-key-schemas.js";

/** One operation of the HTTP API, described by the zod schemas that validate and shape it. */
interface Operation {
  method: "get" | "post" | "put" | "delete" | "patch";
  path: string;
  operationId: string;
  summary: string;
  /** Path parameters, in order; each is an id. */
  params?: string[];
  query?: z.ZodObject;
  body?: z.ZodType;
  /** Successful responses: status, description, body (none for 204). */
  responses: Record<number, { description: string; schema?: z.ZodType; headers?: string[] }>;
  /**
   * Error statuses this operation can answer, besides 401, 429, 500 and 503 (the database unreachable) for every authenticated one,
   * and 400, 413 and 415 for every one with a body (`parseJsonBody`).
   */
  errors?: number[];
  public?: boolean;
  /** 200 may also be `text/event-stream`: the turn's events (`s.turnStreamEvents`). */
  streams?: boolean;
  /** 200 is `text/event-stream` of the Agent Protocol's events (docs/agent-protocol.md). */
  protocolStream?: boolean;
}

/** The document's version: the API's major (v1) and its revisions. */
export const API_VERSION = "1.0.0";

const conversation = "/v1/conversations/{conversationId}";

/** What a request that runs a turn answers: the answer within the deadline, or the queued turn to poll. */
const turnOutcome: Operation["responses"] = {
  200: { description: "The turn finished within the deadline.", schema: s.turnResult },
  202: {
    description: "The turn was queued (poll `location`), or it waits for approval of tool calls (`status: awaiting_approval`; `location` lists them).",
    schema: z.union([s.turnQueued, s.turnAwaitingApproval]),
    headers: ["location"],
  },
};

/** The operations, in the order docs/api.md's route table lists them. */
export const OPERATIONS: Operation[] = [
  {
    method: "get",
    path: "/healthz",
    operationId: "health",
    summary: "Liveness.",
    public: true,
    responses: { 200: { description: "Alive.", schema: s.health } },
    errors: [429],
  },
  {
    method: "get",
    path: "/readyz",
    operationId: "ready",
    summary: "Readiness: the database answers and is set up.",
    public: true,
    responses: { 200: { description: "Ready.", schema: s.ready } },
    errors: [429, 503],
  },
  {
    method: "post",
    path: "/v1/conversations",
    operationId: "createConversation",
    summary: "Start a conversation owned by the caller.",
    body: s.createConversationBody,
    responses: { 201: { description: "Created.", schema: s.conversationCreated, headers: ["location"] } },
  },
  {
    method: "get",
    path: "/v1/conversations",
    operationId: "listConversations",
    summary: "The caller's conversations, most recently active first.",
    query: s.listQuery,
    responses: { 200: { description: "One page.", schema: s.conversationPage } },
    errors: [400],
  },
  {
    method: "get",
    path: conversation,
    operationId: "getConversation",
    summary: "One conversation's summary.",
    params: ["conversationId"],
    responses: { 200: { description: "The conversation.", schema: s.conversationSummary } },
    errors: [400, 404],
  },
  {
    method: "delete",
    path: conversation,
    operationId: "deleteConversation",
    summary: "Delete a conversation and everything stored for it; a running turn stops.",
    params: ["conversationId"],
    responses: { 204: { description: "Deleted." } },
    errors: [400, 403, 404],
  },
  {
    method: "post",
    path: `${conversation}/messages`,
    operationId: "postMessage",
    summary: "Ask a question: the answer, or 202 and the turn to poll when it runs long or `Prefer: respond-async` asks.",
    params: ["conversationId"],
    body: s.postMessageBody,
    responses: turnOutcome,
    errors: [404, 406, 409, 422, 502, 503],
    streams: true,
  },
  {
    method: "post",
    path: `${conversation}/turns/{turnId}/edit`,
    operationId: "editTurn",
    summary: "Edit and resend the latest question: a new turn replaces the named one, from the state before it.",
    params: ["conversationId", "turnId"],
    body: s.postMessageBody,
    responses: turnOutcome,
    errors: [404, 409, 422, 502],
  },
  {
    method: "post",
    path: `${conversation}/turns/{turnId}/regenerate`,
    operationId: "regenerateTurn",
    summary: "Ask the latest question again: a new turn replaces the named one.",
    params: ["conversationId", "turnId"],
    body: s.regenerateBody,
    responses: turnOutcome,
    errors: [404, 409, 422, 502],
  },
  {
    method: "get",
    path: `${conversation}/messages`,
    operationId: "listMessages",
    summary: "The conversation's questions and answers, oldest first.",
    params: ["conversationId"],
    responses: { 200: { description: "The messages.", schema: s.recordedMessages } },
    errors: [400, 404],
  },
  {
    method: "get",
    path: `${conversation}/state`,
    operationId: "getState",
    summary: "The durable state (the checkpointed working set), read-only, and how many earlier turns are archived.",
    params: ["conversationId"],
    responses: { 200: { description: "The thread's working set.", schema: s.threadState } },
    errors: [400, 404],
  },
  {
    method: "get",
    path: `${conversation}/archive`,
    operationId: "listArchivedTurns",
    summary: "Finished turns archived out of the working set, a page at a time from the newest (docs/storage.md).",
    params: ["conversationId"],
    query: s.archiveQuery,
    responses: { 200: { description: "A page of archived turns.", schema: s.archivedTurns } },
    errors: [400, 404],
  },
  {
    method: "get",
    path: `${conversation}/turns`,
    operationId: "listTurns",
    summary: "The conversation's latest 100 turns, newest first; `?status=running` names the one to poll.",
    params: ["conversationId"],
    query: s.turnsQuery,
    responses: { 200: { description: "The turns, without their model calls.", schema: s.turnList } },
    errors: [400, 404],
  },
  {
    method: "get",
    path: `${conversation}/turns/{turnId}/events`,
    operationId: "getTurnEvents",
    summary: "The turn's events as server-sent events, after `Last-Event-ID`: how a streaming client reconnects.",
    params: ["conversationId", "turnId"],
    responses: { 200: { description: "The events until `done` or `failed`." } },
    errors: [400, 404, 406],
    streams: true,
  },
  {
    method: "get",
    path: `${conversation}/turns/{turnId}`,
    operationId: "getTurn",
    summary: "One turn with its model calls and the view each was sent.",
    params: ["conversationId", "turnId"],
    responses: { 200: { description: "The turn.", schema: s.turnDetail } },
    errors: [400, 404],
  },
  {
    method: "get",
    path: `${conversation}/approvals`,
    operationId: "listApprovals",
    summary: "Tool calls of the conversation that wait for, or were given, a person's decision; `?status=pending` for those waiting.",
    params: ["conversationId"],
    query: s.approvalsQuery,
    responses: { 200: { description: "The latest 100 approvals, oldest first.", schema: s.approvalList } },
    errors: [400, 404],
  },
  {
    method: "post",
    path: `${conversation}/approvals/{approvalId}`,
    operationId: "decideApproval",
    summary: "Approve, edit or reject one waiting call; the turn resumes once every call it waits on is decided.",
    params: ["conversationId", "approvalId"],
    body: s.decisionBody,
    responses: { 200: { description: "The decision (the first one, when the same decision is repeated).", schema: s.decisionResult } },
    errors: [403, 404, 409, 410],
  },
  {
    method: "get",
    path: `${conversation}/members`,
    operationId: "listMembers",
    summary: "The conversation's owner and members; for its owner, its members and a tenant admin of its tenant (docs/api.md, Members).",
    params: ["conversationId"],
    responses: { 200: { description: "The owner and the members, in the order they were added.", schema: members.memberList } },
    errors: [400, 404],
  },
  {
    method: "post",
    path: `${conversation}/members`,
    operationId: "addMember",
    summary: "Shares the conversation with an API user of the owner's tenant; its owner or a tenant admin of its tenant only.",
    params: ["conversationId"],
    body: members.addMemberBody,
    responses: {
      200: { description: "Already a member: nothing changed.", schema: members.memberList },
      201: { description: "Added.", schema: members.memberList },
    },
    errors: [403, 404, 409, 422],
  },
  {
    method: "delete",
    path: `${conversation}/members/{memberId}`,
    operationId: "removeMember",
    summary: "Removes a member (its subject), who loses access at once; its owner, a tenant admin, or the member itself (leaving).",
    params: ["conversationId", "memberId"],
    responses: { 204: { description: "Removed." } },
    errors: [400, 403, 404],
  },
  {
    method: "post",
    path: "/v1/mcp",
    operationId: "mcp",
    summary: "The MCP endpoint (Streamable HTTP, stateless, JSON answers): the tools ask, list_conversations and read_conversation (docs/mcp-endpoint.md).",
    body: mcp.mcpMessageBody,
    responses: {
      200: { description: "The JSON-RPC response (one per request of a batch).", schema: mcp.mcpResponse },
      202: { description: "Notifications and responses only: accepted, no body." },
    },
  },
  {
    method: "get",
    path: "/v1/mcp/oauth/callback",
    operationId: "mcpOAuthCallback",
    summary: "Where an MCP server's sign-in returns: bound to the pending sign-in's state, single use, expiring (docs/mcp-oauth.md).",
    public: true,
    query: mcp.oauthCallbackQuery,
    responses: {
      200: {
        description: "Signed in at the server; the tokens wait, held, until the user who asked for the link gives the code in their conversation.",
        schema: mcp.oauthCallbackResult,
      },
    },
    errors: [400, 429, 500],
  },
  {
    method: "get",
    path: "/v1/admin/limits",
    operationId: "getLimits",
    summary:
      "A tenant's or user's limits (its own over the defaults) and what counts against them now; " +
      "a tenant admin on its own tenant, an operator on any (docs/limits.md).",
    query: admin.scopeQuery,
    responses: { 200: { description: "The limits that apply, those set, the defaults, and the counters.", schema: admin.limitsView } },
    errors: [400, 403],
  },
  {
    method: "put",
    path: "/v1/admin/limits",
    operationId: "setLimits",
    summary: "Sets a tenant's or user's own limits (null: no limit; absent: the default); every container applies them within a minute.",
    body: admin.setLimitsBody,
    responses: { 200: { description: "The limits as they now apply.", schema: admin.limitsView } },
    errors: [403],
  },
  {
    method: "get",
    path: "/v1/admin/usage",
    operationId: "getUsage",
    summary:
      "A tenant's or user's usage per UTC day: turns, model calls, tokens by kind, weighted tokens and cost; " +
      "a tenant admin on its own tenant, an operator on any.",
    query: admin.usageQuery,
    responses: { 200: { description: "One entry per day with usage, oldest first, and their total.", schema: admin.usageView } },
    errors: [400, 403],
  },
  {
    method: "get",
    path: "/v1/admin/mcp-servers",
    operationId: "getMcpServers",
    summary: "A tenant's MCP servers: its own entries over the configured ones; a tenant admin on its own tenant, an operator on any (docs/mcp.md).",
    query: adminMcp.mcpTenantQuery,
    responses: { 200: { description: "The servers the tenant's turns use, its own entries and the defaults.", schema: adminMcp.mcpServersView } },
    errors: [400, 403],
  },
  {
    method: "put",
    path: "/v1/admin/mcp-servers",
    operationId: "putMcpServer",
    summary: "Adds or replaces one of a tenant's MCP servers (Streamable HTTP only); every container uses it within `MCP_ENTRIES_CACHE_SECONDS`.",
    body: adminMcp.putMcpServerBody,
    responses: { 200: { description: "The tenant's servers as they now apply.", schema: adminMcp.mcpServersView } },
    errors: [403],
  },
  {
    method: "delete",
    path: "/v1/admin/mcp-servers",
    operationId: "deleteMcpServer",
    summary: "Removes one of a tenant's own MCP servers (a configured default of the same name applies again).",
    query: adminMcp.mcpServerNameQuery,
    responses: { 200: { description: "The tenant's servers as they now apply.", schema: adminMcp.mcpServersView } },
    errors: [400, 403, 404],
  },
  {
    method: "post",
    path: "/v1/admin/erasures",
    operationId: "createErasure",
    summary:
      "Erases a conversation, a user or a tenant, or resumes its unfinished erasure; answers with the deletion receipt. A tenant admin for " +
      "their own tenant, an operator for any (docs/data-lifecycle.md).",
    body: lifecycle.erasureBody,
    responses: { 200: { description: "Erased: the deletion receipt.", schema: lifecycle.deletionReceipt } },
    errors: [403, 404, 409],
  },
  {
    method: "get",
    path: "/v1/admin/erasures/{erasureId}",
    operationId: "getErasure",
    summary: "An erasure: its target, whether it completed, and its receipt.",
    params: ["erasureId"],
    responses: { 200: { description: "The erasure.", schema: lifecycle.erasureView } },
    errors: [400, 403, 404],
  },
  {
    method: "delete",
    path: "/v1/admin/users",
    operationId: "eraseUser",
    summary: "Erases a user: the conversations they own, their part of threads others share (redacted), their records, usage, limits and MCP tokens.",
    query: lifecycle.userQuery,
    responses: { 200: { description: "Erased: the deletion receipt.", schema: lifecycle.deletionReceipt } },
    errors: [400, 403, 409],
  },
  {
    method: "delete",
    path: "/v1/admin/tenants",
    operationId: "eraseTenant",
    summary:
      "Erases a tenant: every conversation and record of it, its usage, limits, MCP servers and tokens (by deletion and, " +
      "with content encryption on, by shredding its keys: the receipt names them and when the shred is final).",
    query: lifecycle.tenantQuery,
    responses: { 200: { description: "Erased: the deletion receipt.", schema: lifecycle.deletionReceipt } },
    errors: [400, 403, 409],
  },
  {
    method: "delete",
    path: "/v1/admin/conversations/{conversationId}",
    operationId: "eraseConversation",
    summary: "Erases any conversation of the caller's tenant, Slack and Teams threads included.",
    params: ["conversationId"],
    responses: { 200: { description: "Erased: the deletion receipt.", schema: lifecycle.deletionReceipt } },
    errors: [400, 403, 404, 409],
  },
  {
    method: "get",
    path: "/v1/admin/exports",
    operationId: "exportData",
    summary:
      "A user's or tenant's data as NDJSON (`application/x-ndjson`): one `{collection, document}` line per document (canonical Extended JSON), " +
      "then one `{manifest}` line with counts and SHA-256 per collection.",
    query: lifecycle.exportQuery,
    responses: { 200: { description: "The export, streamed where the adapter streams." } },
    errors: [400, 403],
  },
  {
    method: "get",
    path: "/v1/admin/audit",
    operationId: "getAuditLog",
    summary: "A tenant's audit records in chain order: who read, exported, erased or changed what, with hashes linking each to the one before.",
    query: lifecycle.auditQuery,
    responses: { 200: { description: "A page of records.", schema: lifecycle.auditView } },
    errors: [400, 403],
  },
  {
    method: "post",
    path: "/v1/admin/content-keys/rotate",
    operationId: "rotateContentKey",
    summary:
      "Rotates a tenant's content key: new writes use the new key from `effectiveAt` in every process, and what earlier keys sealed is " +
      "re-encrypted in the background from then (docs/security.md, Rotation). A tenant admin on its own tenant, an operator on any.",
    body: contentKeys.rotateContentKeyBody,
    responses: {
      200: { description: "The new key's id, when it takes effect everywhere, and the re-encryption scheduled.", schema: contentKeys.rotationView },
    },
    errors: [400, 403, 409],
  },
  {
    method: "get",
    path: "/v1/admin/content-keys",
    operationId: "getContentKeyRotation",
    summary: "A tenant's latest key rotation and its re-encryption's progress; a tenant admin on its own tenant, an operator on any.",
    query: contentKeys.contentKeyTenantQuery,
    responses: { 200: { description: "The re-encryption, or null when the key never rotated.", schema: contentKeys.contentKeyStatusView } },
    errors: [400, 403],
  },
  ...agentProtocolOperations(),
];

/**
 * The Agent Protocol's thread and run operations as Threadwise serves them (docs/agent-protocol.md):
 * what `@langchain/langgraph-sdk` clients call, beside `/v1`, with the same bearer token.
 */
function agentProtocolOperations(): Operation[] {
  const thread = "/threads/{thread_id}";
  const run = `${thread}/runs/{run_id}`;
  const threadOp = { params: ["thread_id"], errors: [404] };
  const runResult = {
    200: { description: "The run's end: the thread's values, `__interrupt__` while approvals wait, `__error__` if it failed.", schema: p.protocolRunResult },
  };
  const streamed = {
    200: { description: "The run's events (`metadata`, then the modes asked: `values`, `messages`, `updates`, `custom`, `events`; `error`)." },
  };
  return [
    {
      method: "get",
      path: "/assistants/{assistant_id}",
      operationId: "protocolGetAssistant",
      summary: "The deployment's one assistant, `threadwise`.",
      params: ["assistant_id"],
      responses: { 200: { description: "The assistant.", schema: p.protocolAssistant } },
      errors: [404],
    },
    {
      method: "post",
      path: "/assistants/search",
      operationId: "protocolSearchAssistants",
      summary: "The one assistant.",
      body: z.looseObject({}),
      responses: { 200: { description: "The assistants.", schema: p.protocolAssistantList } },
    },
    {
      method: "post",
      path: "/threads",
      operationId: "protocolCreateThread",
      summary: "Create a thread (a conversation); `thread_id` names it, `if_exists: do_nothing` returns an existing own one.",
      body: p.createThreadBody,
      responses: { 200: { description: "The thread.", schema: p.protocolThread } },
      errors: [409],
    },
    {
      method: "post",
      path: "/threads/search",
      operationId: "protocolSearchThreads",
      summary: "The caller's threads, newest first, by ids, metadata (equality) and status.",
      body: p.searchThreadsBody,
      responses: { 200: { description: "The threads.", schema: p.protocolThreadList } },
    },
    {
      method: "get",
      path: thread,
      operationId: "protocolGetThread",
      summary: "A thread: its status from its latest run, its values and interrupts.",
      ...threadOp,
      responses: { 200: { description: "The thread.", schema: p.protocolThread } },
    },
    {
      method: "patch",
      path: thread,
      operationId: "protocolPatchThread",
      summary: "Merge keys into a thread's metadata: 400 and nothing written when it would hold more than 32 keys.",
      ...threadOp,
      // 409: the metadata kept changing under concurrent merges (the cap is checked against what was read).
      errors: [404, 409],
      body: p.patchThreadBody,
      responses: { 200: { description: "The thread.", schema: p.protocolThread } },
    },
    {
      method: "delete",
      path: thread,
      operationId: "protocolDeleteThread",
      summary: "Delete a thread, as `DELETE /v1/conversations/{id}`: its owner only (a member is 403).",
      ...threadOp,
      errors: [403, 404],
      responses: { 204: { description: "Deleted." } },
    },
    {
      method: "get",
      path: `${thread}/state`,
      operationId: "protocolGetState",
      summary: "The thread's latest checkpoint: the durable state, as the inspector reads it.",
      ...threadOp,
      responses: { 200: { description: "The state.", schema: p.protocolThreadState } },
    },
    {
      method: "get",
      path: `${thread}/state/{checkpoint_id}`,
      operationId: "protocolGetStateAt",
      summary: "One kept checkpoint of the thread.",
      params: ["thread_id", "checkpoint_id"],
      responses: { 200: { description: "The state.", schema: p.protocolThreadState } },
      errors: [404],
    },
    {
      method: "post",
      path: `${thread}/history`,
      operationId: "protocolGetHistory",
      summary: "The thread's kept checkpoints, newest first (`limit`, `before`).",
      ...threadOp,
      body: p.historyBody,
      responses: { 200: { description: "The states.", schema: p.protocolHistory } },
    },
    {
      method: "post",
      path: `${thread}/runs/wait`,
      operationId: "protocolRunWait",
      summary: "Run a turn (`input`) or resume one waiting for approvals (`command.resume`), and wait for its end.",
      ...threadOp,
      body: p.runBody,
      responses: runResult,
      errors: [404, 409, 422, 503],
    },
    {
      method: "post",
      path: `${thread}/runs/stream`,
      operationId: "protocolRunStream",
      summary: "Run or resume a turn and stream its events; on the streaming URL in AWS.",
      ...threadOp,
      body: p.runBody,
      responses: streamed,
      errors: [404, 406, 409, 422, 503],
      protocolStream: true,
    },
    {
      method: "post",
      path: `${thread}/runs`,
      operationId: "protocolRunCreate",
      summary: "Start a run in the background.",
      ...threadOp,
      body: p.runBody,
      responses: { 200: { description: "The run.", schema: p.protocolRun } },
      errors: [404, 409, 422, 503],
    },
    {
      method: "get",
      path: `${thread}/runs`,
      operationId: "protocolListRuns",
      summary: "The thread's runs (turns), newest first.",
      ...threadOp,
      query: p.runsListQuery,
      responses: { 200: { description: "The runs.", schema: p.protocolRunList } },
    },
    {
      method: "get",
      path: run,
      operationId: "protocolGetRun",
      summary: "A run: its status from its turn's.",
      params: ["thread_id", "run_id"],
      responses: { 200: { description: "The run.", schema: p.protocolRun } },
      errors: [404],
    },
    {
      method: "get",
      path: `${run}/join`,
      operationId: "protocolJoinRun",
      summary: "Wait for a run's end.",
      params: ["thread_id", "run_id"],
      responses: runResult,
      errors: [404],
    },
    {
      method: "get",
      path: `${run}/stream`,
      operationId: "protocolJoinRunStream",
      summary: "A run's events, after `Last-Event-ID`.",
      params: ["thread_id", "run_id"],
      query: p.streamQuery,
      responses: streamed,
      errors: [400, 404, 406],
      protocolStream: true,
    },
    {
      method: "post",
      path: `${run}/cancel`,
      operationId: "protocolCancelRun",
      summary: "Cancel a run waiting for approval: its calls are rejected; a running run cannot be cancelled (409).",
      params: ["thread_id", "run_id"],
      query: p.cancelQuery,
      responses: { 204: { description: "Cancelled." } },
      errors: [400, 404, 409],
    },
  ];
}

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: "Invalid request.",
  401: 'Missing or invalid bearer token; in AWS, API Gateway\'s JWT authorizer answers it first, in its own shape (`{"message": "Unauthorized"}`).',
  403:
    "The caller may not decide this approval (not the requester, or without an approver role), lacks the admin role (`/v1/admin/...`), " +
    "or administers another tenant (erasure, export, audit).",
  404: "Not found, or not the caller's.",
  406: "An event stream was asked of an endpoint that cannot stream (the HTTP API in AWS, whose message names the streaming URL; docs/streaming.md).",
  409:
    "A turn is already running on the conversation, the same Idempotency-Key is in progress, the named turn is " +
    "not the latest (`turn_not_latest`, `turn_superseded`), or the approval was decided otherwise or belongs to " +
    "a turn a newer one replaced (`approval_conflict`, `approval_superseded`).",
  410: "The approval expired before a decision (`approval_expired`); its call was rejected.",
  413: "The body is over 256 KiB, or the question over `MAX_MESSAGE_CHARS`.",
  415: "The body is not JSON.",
  422: "The Idempotency-Key was used with another body, the conversation no longer fits the context budget, or the turn reached its model-call limit.",
  429:
    "A limit of the caller or its tenant (docs/limits.md): `rate_limited` (`limit`, `Retry-After`) or `budget_exhausted` (`limit`, `resetsAt`, " +
    '`Retry-After`), before anything runs; or throttled by API Gateway, which answers in its own shape (`{"message": "Too Many Requests"}`).',
  500: "Internal error.",
  502:
    "The model call failed: `model_unreachable`, `model_not_found`, `model_invalid_request` or `model_denied`, with a " +
    "one-line `reason` (the provider's exception name and status).",
  503: "A dependency is unavailable, or the model is busy (`model_busy`: Bedrock throttling or not ready); retry after `Retry-After`.",
};

const ERROR_REF = { $ref: "#/components/schemas/Error" };
const GATEWAY_ERROR_REF = { $ref: "#/components/schemas/GatewayError" };
/** Bodies of the statuses API Gateway answers before the function (in AWS); every other error is the API's `Error`. */
const GATEWAY_ERROR_SCHEMAS: Record<number, object> = { 401: { anyOf: [ERROR_REF, GATEWAY_ERROR_REF] }, 429: { anyOf: [ERROR_REF, GATEWAY_ERROR_REF] } };

const jsonSchema = (schema: z.ZodType, io: "input" | "output") => {
  const { $schema: _, ...rest } = z.toJSONSchema(schema, { target: "draft-2020-12", io, unrepresentable: "any" });
  return rest;
};
const jsonContent = (schema: z.ZodType, io: "input" | "output") => ({ "application/json": { schema: jsonSchema(schema, io) } });

/**
 * `Accept: text/event-stream`: the events one after another. OpenAPI 3.1 has no schema for a
 * stream's items, so each event's data schema is given under `x-events`, by event name.
 */
const EVENT_STREAM_CONTENT = {
  "text/event-stream": {
    schema: { type: "string", description: "Server-sent events: `id` (all but `turn`), `event` (the name), `data` (one line of JSON)." },
    "x-events": Object.fromEntries(Object.entries(s.turnStreamEvents).map(([name, schema]) => [name, jsonSchema(schema, "output")])),
  },
};

/** The Agent Protocol's stream: its events by name (docs/agent-protocol.md). */
const PROTOCOL_STREAM_CONTENT = {
  "text/event-stream": {
    schema: {
      type: "string",
      description: "Server-sent events of the Agent Protocol: `metadata`, `values`, `messages`, `messages/partial`, `updates`, `custom`, `events`, `error`.",
    },
  },
};

function operationObject(op: Operation) {
  const parameters = [
    ...(op.params ?? []).map((name) => ({ name, in: "path", required: true, schema: jsonSchema(s.idParam, "input") })),
    ...Object.entries(op.query?.shape ?? {}).map(([name, schema]) => ({
      name,
      in: "query",
      required: !(schema as z.ZodType).safeParse(undefined).success,
      schema: jsonSchema(schema as z.ZodType, "input"),
    })),
    ...(op.method === "post" && op.path.endsWith("/messages")
      ? [
          {
            name: "Idempotency-Key",
            in: "header",
            required: false,
            schema: { type: "string", maxLength: 255 },
            description: "Retries with the same key return the same turn.",
          },
          { name: "Prefer", in: "header", required: false, schema: { type: "string" }, description: "`respond-async`: answer 202 at once." },
        ]
      : []),
    ...(op.streams
      ? [{ name: "Last-Event-ID", in: "header", required: false, schema: { type: "string", pattern: "^[0-9]{1,9}$" }, description: "Resume after this event." }]
      : []),
  ];
  const bodyErrors = op.body ? [400, 413, 415] : [];
  const errors = op.public ? (op.errors ?? []) : [...new Set([...(op.errors ?? []), ...bodyErrors, 401, 429, 500, 503])].sort();
  const responses: Record<string, unknown> = {};
  for (const [status, r] of Object.entries(op.responses)) {
    responses[status] = {
      description: r.description,
      ...(r.headers ? { headers: Object.fromEntries(r.headers.map((h) => [h, { schema: { type: "string" } }])) } : {}),
      ...(r.schema || ((op.streams || op.protocolStream) && status === "200")
        ? {
            content: {
              ...(r.schema ? jsonContent(r.schema, "output") : {}),
              ...(op.streams && status === "200" ? EVENT_STREAM_CONTENT : {}),
              ...(op.protocolStream && status === "200" ? PROTOCOL_STREAM_CONTENT : {}),
            },
          }
        : {}),
    };
  }
  for (const status of errors)
    responses[status] = { description: ERROR_DESCRIPTIONS[status], content: { "application/json": { schema: GATEWAY_ERROR_SCHEMAS[status] ?? ERROR_REF } } };
  return {
    operationId: op.operationId,
    summary: op.summary,
    ...(op.public ? { security: [] } : {}),
    ...(parameters.length ? { parameters } : {}),
    ...(op.body
      ? { requestBody: { required: !["createConversation", "regenerateTurn"].includes(op.operationId), content: jsonContent(op.body, "input") } }
      : {}),
    responses,
  };
}

/** Where the API is served: the local server, and a deployed stage's HTTP API (its `ApiUrl` output). */
export const API_SERVERS = [
  { url: "http://127.0.0.1:3000", description: "The local server (`npm start`)." },
  {
    url: "https://{apiId}.execute-api.{region}.amazonaws.com",
    description: "A deployed stage: the `ApiUrl` stack output. The event streams are on the `StreamingUrl` output instead.",
    variables: { apiId: { default: "abc123", description: "The HTTP API's id." }, region: { default: "us-east-1", description: "The stage's region." } },
  },
];

/** The package is private and names no licence: the document says so rather than inventing one. */
export const API_LICENSE = { name: "Proprietary", identifier: "LicenseRef-Proprietary" };

/**
 * The OpenAPI 3.1 document of the HTTP API, generated from `schemas.ts`; served at
 * `/openapi.json` and checked against every API test's responses.
 */
export function openApiDocument(): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of OPERATIONS) (paths[op.path] ??= {})[op.method] = operationObject(op);
  return {
    openapi: "3.1.0",
    info: {
      title: "Threadwise HTTP API",
      version: API_VERSION,
      description: "A stateful assistant: conversations, turns and their model views.",
      license: API_LICENSE,
    },
    servers: API_SERVERS,
    security: [{ bearer: [] }],
    paths,
    components: {
      securitySchemes: { bearer: { type: "http", scheme: "bearer", bearerFormat: "JWT" } },
      schemas: { Error: jsonSchema(s.errorResponse, "output"), GatewayError: jsonSchema(s.gatewayError, "output") },
    },
  };
}
