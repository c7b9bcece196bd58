import { CONTENT_KEYS_COLLECTION } from "../crypto/tenant-keys.js";

/** MongoDB collection names. Checkpoint collections are LangGraph's; the rest are the application's. */
export const COLLECTIONS = {
  checkpoints: "checkpoints",
  checkpointWrites: "checkpoint_writes",
  checkpointBlobs: "checkpoint_blobs",
  checkpointThreads: "checkpoint_threads",
  conversations: "conversations",
  /** Channel threads whose conversation was deleted, for as long as a job of theirs may come back (`ConversationStore`). */
  deletedChannelKeys: "deleted_channel_keys",
  messages: "messages",
  turns: "turns",
  modelCalls: "model_calls",
  /** Finished turns moved out of a thread's working set, one document per turn or part of one (`TurnArchiveStore`). */
  turnArchive: "turn_archive",
  artifacts: "artifacts",
  idempotency: "idempotency",
  followUps: "follow_ups",
  /** Tool calls waiting for, or decided by, a person (`ApprovalStore`). */
  approvals: "approvals",
  channelEvents: "channel_events",
  recallTurns: "recall_turns",
  recallIndex: "recall_index",
  /** A turn's streamed events, in batches, for clients that reconnect (short-lived). */
  turnEvents: "turn_events",
  /** The local server's durable turn queue (`MongoTurnQueue`); SQS holds these in AWS. */
  turnJobs: "turn_jobs",
  /** What counts against each tenant's and user's limits now (`lib/limits`, docs/limits.md). */
  limitCounters: "limit_counters",
  /** The limits set per tenant and user through the admin API. */
  limitOverrides: "limit_overrides",
  /** Usage per tenant or user and UTC day, for the admin API. */
  usageDaily: "usage_daily",
  /** A user's sealed OAuth tokens per MCP server (`McpOAuthStore`, docs/mcp-oauth.md). */
  mcpOAuthTokens: "mcp_oauth_tokens",
  /** MCP sign-ins started and not finished, bound to their state (single use, TTL). */
  mcpOAuthSignIns: "mcp_oauth_sign_ins",
  /** Clients registered dynamically with an MCP server's authorization server, per tenant and server. */
  mcpOAuthClients: "mcp_oauth_clients",
  /** MCP servers a tenant added through the admin API, one document per tenant and server (`McpServerStore`). */
  mcpServers: "mcp_servers",
  /** Erasure jobs: target, progress and, once done, the deletion receipt (`lib/lifecycle`, docs/data-lifecycle.md). */
  erasures: "erasures",
  /** The audit log: append-only, one hash chain per tenant (`lib/audit`, docs/data-lifecycle.md). */
  auditLog: "audit_log",
  /** Tenants' KMS keys by ARN, when `CONTENT_KEYS=kms` (`KmsTenantKeys`, docs/security.md). */
  contentKeys: CONTENT_KEYS_COLLECTION,
  /** Tenants' recall term keys, sealed by their content keys (`TenantTermKeys`, docs/security.md). */
  termKeys: "term_keys",
  /** Each tenant's re-encryption after its latest key rotation: the key, the pass's cursor and counts (`ContentResealer`, docs/security.md). */
  contentReseals: "content_reseals",
  /** One document recording which version of the indexes `setup()` made (`DATABASE_SETUP_VERSION`). */
  setup: "setup",
} as const;

export type CollectionName = (typeof COLLECTIONS)[keyof typeof COLLECTIONS];
