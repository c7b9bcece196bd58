import type { MongoClient } from "mongodb";
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { createChatModel, createModelTokenCounter } from "./agent/chat-model.js";
import type { FaultInjector } from "./agent/fault-points.js";
import type { Clock } from "./clock.js";
import type { StructuredLogger } from "./logger.js";
import { createAgentGraph } from "./agent/graph.js";
import { DEFAULT_SYSTEM_PROMPT } from "./agent/system-prompt.js";
import { TurnRunner } from "./agent/turn-runner.js";
import { EndOfTurn } from "./agent/end-of-turn.js";
import { TurnRecovery } from "./agent/turn-recovery.js";
import { priceOf } from "./config/model-config.js";
import type { Config } from "./config/config.js";
import { TokenCalibration } from "./model-view/token-calibration.js";
import { DEFAULT_TURN_DIGEST } from "./model-view/turn-digest.js";
import { DEFAULT_PARAMETER_LEDGER } from "./model-view/parameter-ledger.js";
import { DEFAULT_STANDING_LEDGER } from "./model-view/standing-ledger.js";
import { ValidationError } from "./errors.js";
import { TurnDispatcher } from "./queue/turn-dispatcher.js";
import type { TurnMetricsSink } from "./queue/turn-metrics.js";
import type { TurnQueue } from "./queue/turn-queue.js";
import type { ThreadwiseDatabase } from "./store/database.js";
import { createMongoClient } from "./store/mongo-client.js";
import type { ToolDefinition } from "./tools/tool.js";
import { ToolIdempotencyGuard } from "./tools/tool-idempotency-guard.js";
import { ToolRegistry } from "./tools/tool-registry.js";
import { createDefaultTools } from "./tools/create-default-tools.js";
import type { SecretSource } from "./tools/secrets.js";
import type { TenantKeys } from "./crypto/tenant-keys.js";
import { COLLECTIONS } from "./store/collections.js";
import { offloadToolOutput } from "./tools/output-offload.js";
import { databaseFor, ensureDatabaseSetUp, setupDatabase } from "./setup-database.js";
import { createReadToolOutputTool, DEFAULT_READ_MAX_TOKENS } from "./tools/read-tool-output.js";
import { ConversationSearch } from "./recall/conversation-search.js";
import { BedrockEmbedder, type Embedder } from "./recall/embedder.js";
import { createSearchConversationTool, SEARCH_CONVERSATION_NAME } from "./recall/search-conversation-tool.js";
import { TurnIndexer } from "./recall/turn-indexer.js";
import { TurnEvents } from "./events/turn-events.js";
import { TurnEventHub } from "./events/turn-event-hub.js";
import { Approvals } from "./approvals/approvals.js";
import { resumeJobOf } from "./approvals/resume-job.js";
import { turnIdForJob } from "./queue/turn-queue.js";
import { recoveryJobOf, withTurnQuestion } from "./queue/turn-job.js";
import { Limits, type LimitUsageSink } from "./limits/limits.js";
import { TurnAdmission } from "./limits/turn-admission.js";
import { createMcp, type Mcp } from "./mcp/create-mcp.js";
import type { McpOAuthProviderFactory } from "./mcp/mcp-oauth-provider.js";
import type { McpCallEvent } from "./mcp/mcp-tool-catalog.js";
import { TenantToolRunner } from "./mcp/tenant-tool-runner.js";
import { AuditLog } from "./audit/audit-log.js";
import { Eraser } from "./lifecycle/eraser.js";
import { KeyRotation } from "./lifecycle/key-rotation.js";

/**
 * When the app makes the database's indexes: `create` before it serves (the local server, tests);
 * `ensure` only if the database does not record them, checked once before the first request that
 * needs the database (Lambda, where the deploy step makes them: docs/deploying.md, "Database set-up").
 */
export type DatabaseSetupMode = "create" | "ensure";

export interface AppOptions {
  /** Default: `create`. */
  setup?: DatabaseSetupMode;
  /** A client the caller owns; otherwise one is created from `config.mongodbUri` and closed by `close()`. */
  mongoClient?: MongoClient;
  /**
   * Tenants' keys for contents at rest (`createTenantKeys`, docs/security.md): the local server passes its key files.
   * Default: none, contents stored clear.
   */
  contentKeys?: TenantKeys;
  /** Default: the provider named by config. */
  model?: BaseChatModel;
  /** The tools offered besides `read_tool_output`. Default: the deployment's tools, chosen by `config.tools`. */
  tools?: ToolDefinition[];
  /** Where the default tools read their credentials (Power BI). Default: none. */
  secrets?: SecretSource;
  /** Test-only crash points; never set in production. */
  faults?: FaultInjector;
  /**
   * Test-only: `false` keeps every message in the thread, as threads were written before the
   * working set (docs/storage.md, "What a thread keeps"), to make fixtures of such threads. Default: true.
   */
  archiveTurns?: boolean;
  /** What leases measure time with. Default: the system clock; tests pass one they advance. */
  clock?: Clock;
  /** Embeds turns and queries for `search_conversation`. Default: Bedrock when `RECALL_EMBEDDINGS_MODEL_ID` is set, else none (lexical search only). */
  embedder?: Embedder;
  /** Default: silent. */
  logger?: StructuredLogger;
  /** Where long and async API turns go (SQS in AWS, in-process locally). Default: none; every turn runs in the request. */
  turnQueue?: TurnQueue;
  /** Receives the figures of every turn finished in the request (Lambda: CloudWatch metrics). */
  onTurnCompleted?: TurnMetricsSink;
  /** Receives the error of every turn that failed in the request (Lambda: the failed-turn metric). */
  onTurnFailed?: (error: unknown) => void;
  /** Per-user OAuth providers for `oauth` MCP servers (lib/mcp/oauth/). Default: none; such servers' tools are not offered. */
  mcpOAuth?: McpOAuthProviderFactory;
  /** Whether stdio MCP servers may run: local mode only. Default: false. */
  mcpStdio?: boolean;
  /** Networks MCP servers may be reached at although not public, over `MCP_EGRESS_ALLOW` (the local server: loopback). Default: none. */
  mcpEgressAllow?: readonly string[];
  /** Receives each MCP call's and discovery's outcome (Lambda: metrics). Default: none. */
  onMcpEvent?: (event: McpCallEvent) => void;
  /** Receives what each model call added to a tenant's and user's usage (Lambda: the usage metrics, docs/limits.md). */
  onLimitUsage?: LimitUsageSink;
  /** What the limits' windows and expiries are measured by. Default: the system clock. */
  limitsNow?: () => Date;
}

/** The product's core, one per container or process; HTTP is served over it by `createHttpHandler` (`lib/api/http-handler.ts`). */
export interface App {
  /** Resolves once the database is known to be set up (at once in `create` mode); a failed check is tried again on the next call. */
  ready(): Promise<void>;
  database: ThreadwiseDatabase;
  runner: TurnRunner;
  /** The tools offered to the model, filtered per caller (the local console lists them). */
  tools: ToolRegistry;
  /** Hands long and async API turns to the worker, when the app has a turn queue. */
  dispatcher?: TurnDispatcher;
  /** Where every turn records its events; clients follow them through a `TurnEventFollower` over its hub (docs/streaming.md). */
  events: TurnEvents;
  /** Decisions on tool calls waiting for a person (docs/approvals.md). */
  approvals: Approvals;
  /** Finishes turns whose attempt died: the scheduled sweep in AWS, on start and on a timer locally (docs/recovery.md). */
  recovery: TurnRecovery;
  /** Budgets and rate limits per tenant and user, and their usage (docs/limits.md). */
  limits: Limits;
  /** The one owner of a turn's admission under those limits: every entry that runs a turn runs it through `admission.run` (docs/limits.md). */
  admission: TurnAdmission;
  /** Tenants' MCP servers and their tools (docs/mcp.md). */
  mcp: Mcp;
  /** Who read, exported, erased or changed what, one hash chain per tenant (docs/data-lifecycle.md). */
  audit: AuditLog;
  /** Erasure of conversations, users and tenants, with deletion receipts (docs/data-lifecycle.md). */
  eraser: Eraser;
  /** Tenants' content keys rotated on demand and on a schedule, and re-encryption after (docs/security.md, "Rotation"). */
  keyRotation: KeyRotation;
  close(): Promise<void>;
}

/** The composition root: one per container (Lambda) or process (local server). */
export async function createApp(config: Config, options: AppOptions): Promise<App> {
  const ownsClient = !options.mongoClient;
  const client = options.mongoClient ?? createMongoClient(requireUri(config), config.mongo);
  const database = databaseFor(client, config, options.clock, options.contentKeys);
  const ready = await readiness(database, options.setup ?? "create", options.logger);
  const defaults = options.tools
    ? undefined
    : createDefaultTools(config.tools, {
        followUps: database.db.collection(COLLECTIONS.followUps),
        followUpCipher: database.cipher,
        secrets: options.secrets ?? NO_SECRETS,
      });
  const guard = new ToolIdempotencyGuard({
    collection: database.idempotency,
    cipher: database.cipher,
    inProgressTimeoutMs: config.tools.timeoutMs,
    expiresAfterSeconds: config.tools.idempotencyTtlSeconds,
  });
  const embedder = options.embedder ?? createEmbedder(config);
  const indexer = new TurnIndexer({ index: database.recall, messages: database.messages, turns: database.turns, embedder, logger: options.logger });
  const offered = [...(options.tools ?? defaults?.tools ?? []), readToolOutput(database, config), searchConversation(database, config, embedder, options)];
  const registryOptions = { guard, timeoutMs: config.tools.timeoutMs, roles: config.tools.roles, logger: options.logger };
  const registry = new ToolRegistry(offered, registryOptions);
  const mcp = createMcp(database.db, config.mcp, {
    secrets: options.secrets ?? NO_SECRETS,
    oauth: options.mcpOAuth,
    allowStdio: options.mcpStdio,
    egressAllow: options.mcpEgressAllow,
    logger: options.logger,
    onEvent: options.onMcpEvent,
  });
  const model = options.model ?? createChatModel(config.model);
  const bedrock = config.model.provider === "bedrock";
  const modelId = bedrock ? config.model.bedrockModelId : (config.model.openAiCompatible?.model ?? "local");
  const { promptCache, tokenMargin } = config.view;
  const price = priceOf(config.model.prices, modelId);
  const limits = new Limits(database.db, {
    config: config.limits,
    price,
    maxOutputTokens: config.model.maxOutputTokens,
    firstCallInputTokens: config.view.totalBudget,
    now: options.limitsNow,
    onUsage: options.onLimitUsage,
    logger: options.logger,
  });
  const admission = new TurnAdmission(limits);
  const graph = createAgentGraph({
    limits: admission,
    model,
    modelId,
    calibration: new TokenCalibration({ initialMargin: tokenMargin.initial, minMargin: tokenMargin.min }),
    price,
    sendCachePoints: bedrock && promptCache.enabled,
    countTokens: config.model.countTokens ? createModelTokenCounter(model, modelId) : undefined,
    tools: new TenantToolRunner({
      tools: offered,
      registry: registryOptions,
      approvals: config.tools.approvals.tools,
      offload: (output, meta) => offloadToolOutput(output, meta, { artifacts: database.artifacts, thresholdTokens: config.view.toolOutputTokens }),
      catalog: mcp.catalog,
      servers: (caller) => mcp.serversOf(caller),
      logger: options.logger,
    }),
    checkpointer: database.checkpointer,
    archive: options.archiveTurns === false ? undefined : database.archive,
    faults: options.faults,
    logger: options.logger,
    policy: {
      systemPrompt: config.view.systemPrompt ?? DEFAULT_SYSTEM_PROMPT,
      finishedTurns: config.view.finishedTurns,
      historyBlockTurns: config.view.historyBlockTurns,
      toolOutputTokens: config.view.toolOutputTokens,
      totalBudget: config.view.totalBudget,
      // Computed for the local model too, so the console shows where a Bedrock request would be cached.
      cache: promptCache.enabled ? promptCache : undefined,
      outOfSight: { toolName: SEARCH_CONVERSATION_NAME },
      // What a follow-up needs of a finished turn's tools (docs/sufficiency.md).
      turnDigest: DEFAULT_TURN_DIGEST,
      // The time anchors of turns that left the window or the thread (docs/sufficiency.md).
      parameterLedger: DEFAULT_PARAMETER_LEDGER,
      standingLedger: DEFAULT_STANDING_LEDGER,
    },
  });
  const events = new TurnEvents({ store: database.turnEvents, hub: new TurnEventHub({ maxBytes: config.deployment.liveEventsMaxBytes }) });
  // What the runner and the recovery sweep both drive a turn with: the same graph, records and lease.
  const turnParts = {
    graph,
    events,
    conversations: database.conversations,
    messages: database.messages,
    turns: database.turns,
    lease: database.lease,
    threads: database.checkpointer,
    toolCalls: guard,
  };
  const runner = new TurnRunner({
    ...turnParts,
    archive: database.archive,
    faults: options.faults,
    approvals: { store: database.approvals, ttlMs: config.tools.approvals.ttlSeconds * 1000, argumentsSchema: (tool) => registry.argumentsSchema(tool) },
    endOfTurn: new EndOfTurn({ indexer, checkpoints: database.checkpointer, retention: database.retention, logger: options.logger }),
  });
  const dispatcher = options.turnQueue
    ? new TurnDispatcher({
        runner,
        turns: database.turns,
        queue: options.turnQueue,
        syncDeadlineMs: config.deployment.syncTurnDeadlineMs,
        ...(config.deployment.syncTurnMaxMs !== undefined && { maxSyncMs: config.deployment.syncTurnMaxMs }),
        onTurnCompleted: options.onTurnCompleted,
        onTurnFailed: options.onTurnFailed,
      })
    : undefined;
  const audit = new AuditLog(database.db, { retentionDays: config.lifecycle.auditRetentionDays, logger: options.logger });
  const eraser = new Eraser({ database, audit, auditRetentionDays: config.lifecycle.auditRetentionDays, mcpDefaults: mcp.defaults });
  const keyRotation = new KeyRotation({ database, audit, rotationDays: config.encryption.keyRotationDays, logger: options.logger });
  const approvals = new Approvals({
    store: database.approvals,
    turns: database.turns,
    faults: options.faults,
    onDecided: async (approval, caller) => {
      const { issuer, tenant } = caller.principal;
      await audit.append({
        action: "approval.decide",
        actor: { ...caller.principal },
        tenant: { issuer, tenant },
        resource: { conversationId: approval.conversationId, turnId: approval.turnId, approvalId: approval._id, tool: approval.tool },
        channel: issuer,
        detail: { decision: approval.decision?.kind ?? null },
      });
    },
    resume: async (approval, resumeKey) => {
      const queued = resumeJobOf(approval, resumeKey);
      if (options.turnQueue) return options.turnQueue.enqueue(queued);
      // Without a worker (tests, a deployment without queue) an API turn resumes in the deciding request.
      if (queued.channel !== "api") throw new ValidationError("a channel turn resumes only through the turn queue");
      const turnId = turnIdForJob(queued);
      const job = await withTurnQuestion(database.turns, turnId, queued);
      const caller = { principal: job.principal, roles: job.roles };
      // Admitted like a new turn: with no slot free the decision's request answers 429, and a repeat of it resumes the turn (docs/limits.md).
      await admission.run({ turnId, principal: caller.principal, resumes: true }, (hold) =>
        runner.run({ conversationId: job.conversationKey, caller, content: job.content, turnId, origin: job, hold }),
      );
    },
  });
  const recovery = new TurnRecovery({
    ...turnParts,
    logger: options.logger,
    // Through the queue, as the turn's job: its attempt resumes from the checkpoint, effects through the idempotency guard.
    resume: options.turnQueue ? async (turn) => options.turnQueue!.enqueue(recoveryJobOf(turn)) : undefined,
  });
  return {
    ready,
    database,
    runner,
    tools: registry,
    dispatcher,
    events,
    approvals,
    recovery,
    limits,
    admission,
    mcp,
    audit,
    eraser,
    keyRotation,
    async close() {
      await mcp.close();
      await defaults?.close();
      if (ownsClient) await client.close();
    },
  };
}

/** Its pages stay under the offload threshold, or its own answers would come back as notices. */
function readToolOutput(database: ThreadwiseDatabase, config: Config): ToolDefinition {
  const maxTokens = Math.max(200, Math.min(DEFAULT_READ_MAX_TOKENS, config.view.toolOutputTokens - 100));
  return createReadToolOutputTool(database.artifacts, { maxTokens });
}

/** Its answers stay under the offload threshold too, for the same reason as `read_tool_output`'s. */
function searchConversation(database: ThreadwiseDatabase, config: Config, embedder: Embedder | undefined, options: AppOptions): ToolDefinition {
  const maxTokens = Math.max(200, Math.min(config.recall.maxTokens, config.view.toolOutputTokens - 100));
  const search = new ConversationSearch({ index: database.recall, embedder, logger: options.logger });
  const allowedRoles = config.tools.roles[SEARCH_CONVERSATION_NAME];
  const view = { finishedTurns: config.view.finishedTurns, historyBlockTurns: config.view.historyBlockTurns };
  return createSearchConversationTool({ search, view, maxTokens, allowedRoles });
}

function createEmbedder(config: Config): Embedder | undefined {
  const { embeddingsModelId, embeddingsRegion, embeddingDimensions } = config.recall;
  if (!embeddingsModelId) return undefined;
  return new BedrockEmbedder({ modelId: embeddingsModelId, region: embeddingsRegion ?? config.model.region, dimensions: embeddingDimensions });
}

const NO_SECRETS: SecretSource = { get: async () => undefined };

/** `create`: set up now, ready at once. `ensure`: check (and set up if needed) on first call, again after a failure. */
async function readiness(database: ThreadwiseDatabase, mode: DatabaseSetupMode, logger?: StructuredLogger): Promise<() => Promise<void>> {
  if (mode === "create") {
    await setupDatabase(database);
    return async () => undefined;
  }
  let checked: Promise<void> | undefined;
  return () => {
    checked ??= ensureDatabaseSetUp(database).then(
      (ran) => {
        if (ran) logger?.warn("database set up at cold start", { reason: "the deploy step had not set up this database" });
      },
      (error: unknown) => {
        checked = undefined;
        throw error;
      },
    );
    return checked;
  };
}

function requireUri(config: Config): string {
  if (!config.mongodbUri) throw new ValidationError("MONGODB_URI is not set", [{ path: "MONGODB_URI", message: "required" }]);
  return config.mongodbUri;
}
