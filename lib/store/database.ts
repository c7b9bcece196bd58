import type { Collection, Db, MongoClient } from "mongodb";
import type { Clock } from "../clock.js";
import { ThreadwiseError } from "../errors.js";
import { ApprovalStore } from "./approval-store.js";
import { ArtifactStore } from "./artifact-store.js";
import { COLLECTIONS } from "./collections.js";
import { IdempotencyPersistenceLayer, type IdempotencyDocument } from "./idempotency-persistence-layer.js";
import { ConversationStore } from "./conversation-store.js";
import { ConversationLease } from "./lease.js";
import { MessageStore } from "./message-store.js";
import { RecallIndexStore } from "./recall-index-store.js";
import { TurnArchiveStore } from "./turn-archive-store.js";
import { RetentionPolicy } from "./retention.js";
import { runMigrations, schemaVersion } from "./migrations/migration-runner.js";
import { ThreadwiseSaver } from "./threadwise-saver.js";
import { TurnEventStore } from "./turn-event-store.js";
import { TurnStore } from "./turn-store.js";

export class DatabaseSetupError extends ThreadwiseError {
  override name = "DatabaseSetupError";
}

/**
 * The version of the indexes `setup()` makes. Bump it when an index is added or changed: a
 * function that finds an older version recorded sets the database up before serving.
 */
export const DATABASE_SETUP_VERSION = 8;

const SETUP_ID = "indexes";

interface SetupDocument {
  _id: string;
  version: number;
  setUpAt: Date;
}

export interface ThreadwiseDatabaseOptions {
  dbName: string;
  /** Default: `DEFAULT_LEASE_TTL_MS` (lib/config). */
  leaseTtlMs?: number;
  /** Days of inactivity before a conversation expires everywhere. Default: `DEFAULT_RETENTION_DAYS`. */
  retentionDays?: number;
  /** Checkpoints kept per thread after each turn. Default: `DEFAULT_CHECKPOINTS_KEPT` (lib/config). */
  checkpointsKept?: number;
  /** What the lease measures time with. Default: the system clock. */
  clock?: Clock;
}

/**
 * Every store of one database, over a client the caller owns (never closed here).
 * `setup()` creates the indexes, fails loudly if any cannot be made, and records that it ran; it
 * is a deploy step in AWS (docs/deploying.md, "Database set-up"), and `isSetUp()` is what a cold start reads.
 */
export class ThreadwiseDatabase {
  readonly db: Db;
  readonly conversations: ConversationStore;
  readonly messages: MessageStore;
  readonly turns: TurnStore;
  readonly lease: ConversationLease;
  readonly artifacts: ArtifactStore;
  /** Idempotency records of requests and tool side effects (Powertools persistence layer). */
  readonly idempotency: Collection<IdempotencyDocument>;
  readonly checkpointer: ThreadwiseSaver;
  readonly retention: RetentionPolicy;
  /** What `search_conversation` searches: finished turns, indexed when they finish. */
  readonly recall: RecallIndexStore;
  /** Finished turns archived out of threads' working sets. */
  readonly archive: TurnArchiveStore;
  /** Turns' streamed events, kept for clients that reconnect. */
  readonly turnEvents: TurnEventStore;
  /** Tool calls waiting for a person's decision, and the decisions. */
  readonly approvals: ApprovalStore;

  constructor(client: MongoClient, options: ThreadwiseDatabaseOptions) {
    this.db = client.db(options.dbName);
    this.retention = new RetentionPolicy(this.db, { days: options.retentionDays });
    this.conversations = new ConversationStore(this.db, this.retention.periodMs);
    this.messages = new MessageStore(this.db);
    this.turns = new TurnStore(this.db);
    this.lease = new ConversationLease(this.conversations.collection, {
      ttlMs: options.leaseTtlMs,
      retentionMs: this.retention.periodMs,
      clock: options.clock,
    });
    this.artifacts = new ArtifactStore(this.db);
    this.recall = new RecallIndexStore(this.db);
    this.archive = new TurnArchiveStore(this.db);
    this.turnEvents = new TurnEventStore(this.db);
    this.approvals = new ApprovalStore(this.db);
    this.idempotency = this.db.collection<IdempotencyDocument>(COLLECTIONS.idempotency);
    this.checkpointer = new ThreadwiseSaver({
      client,
      dbName: options.dbName,
      checkpointsKept: options.checkpointsKept,
      expiresAfterMs: this.retention.periodMs,
    });
  }

  /**
   * Creates every index (and those of `extra`, the collections of layers above the store), records the
   * version, then runs the migrations due.
   * @throws SchemaVersionError when the database's schema version is newer than this release's.
   */
  async setup(extra: readonly (() => Promise<unknown>)[] = []): Promise<void> {
    // Refused before anything is written when a later release set the database up.
    await schemaVersion(this.db);
    const errors = [...(await this.checkpointer.setup())];
    const results = await Promise.allSettled([
      this.conversations.setup(),
      this.messages.setup(),
      this.turns.setup(),
      this.artifacts.setup(),
      this.retention.setup(),
      this.recall.setup(),
      this.archive.setup(),
      this.turnEvents.setup(),
      this.approvals.setup(),
      this.setupFollowUps(),
      this.setupIdempotency(),
      this.setupIdempotencyOwners(),
      ...extra.map((step) => step()),
    ]);
    for (const r of results) if (r.status === "rejected") errors.push(r.reason);
    if (errors.length > 0) throw new DatabaseSetupError(`database setup failed (${errors.length} errors)`, { cause: errors[0] });
    await this.setupRecord().updateOne({ _id: SETUP_ID }, { $set: { version: DATABASE_SETUP_VERSION, setUpAt: new Date() } }, { upsert: true });
    // The numbered migrations due (lib/store/migrations/), each recorded in the schema version document.
    await runMigrations(this.db);
  }

  /** True when `setup()` of this version (or a later one) has run on this database: one read. */
  async isSetUp(): Promise<boolean> {
    const record = await this.setupRecord().findOne({ _id: SETUP_ID });
    return record !== null && record.version >= DATABASE_SETUP_VERSION;
  }

  private setupRecord(): Collection<SetupDocument> {
    return this.db.collection<SetupDocument>(COLLECTIONS.setup);
  }

  /** The TTL index that removes expired idempotency records, of requests and tool effects alike. */
  private async setupIdempotency(): Promise<void> {
    await new IdempotencyPersistenceLayer({ collection: this.idempotency }).setup();
  }

  /** Deletion and retention find a conversation's follow-ups by its id. */
  private async setupFollowUps(): Promise<void> {
    await this.db.collection(COLLECTIONS.followUps).createIndex({ conversationId: 1 }, { name: "conversation" });
  }

  /** Deletion finds a conversation's idempotency records, and erasure a user's, by what is stored beside their hashes. */
  private async setupIdempotencyOwners(): Promise<void> {
    await this.idempotency.createIndex({ conversationId: 1 }, { name: "conversation", sparse: true });
    await this.idempotency.createIndex({ "owner.issuer": 1, "owner.tenant": 1, "owner.subject": 1 }, { name: "owner", sparse: true });
  }

  /**
   * Removes the conversation from every collection, checkpoints and writes included, and what
   * would otherwise expire by itself: its idempotency records (requests and tool effects, found by
   * the conversation stored beside their hashes) and its queued jobs (`turn_jobs`, local mode). The
   * lease is revoked first, so a turn still running is fenced out: its next write fails and its
   * heartbeat stops it (docs/storage.md, "Turns and fencing").
   */
  async deleteConversation(conversationId: string): Promise<void> {
    const doc = await this.conversations.get(conversationId);
    await this.lease.revoke(conversationId);
    await this.checkpointer.deleteThread(conversationId);
    // A channel job names its thread by the channel's key, an API job by the conversation id.
    const jobKeys = doc?.channel.key === undefined ? [conversationId] : [conversationId, doc.channel.key];
    await Promise.all([
      this.idempotency.deleteMany({ conversationId }),
      this.db.collection(COLLECTIONS.turnJobs).deleteMany({ "job.conversationKey": { $in: jobKeys } }),
    ]);
    await Promise.all([
      this.messages.deleteByConversation(conversationId),
      this.turns.deleteByConversation(conversationId),
      this.artifacts.deleteByConversation(conversationId),
      this.recall.deleteByConversation(conversationId),
      this.archive.deleteByConversation(conversationId),
      this.turnEvents.deleteByConversation(conversationId),
      this.approvals.deleteByConversation(conversationId),
      this.db.collection(COLLECTIONS.followUps).deleteMany({ conversationId }),
    ]);
    await this.conversations.delete(conversationId);
  }
}
